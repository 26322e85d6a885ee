package bump

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sebdah/goldie/v2"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/reconstruction"
	"github.com/tcpxogen/tcpxogen/internal/registrytest"
	"github.com/tcpxogen/tcpxogen/pipeline/extract"
)

// publishedRepos is where Google publishes both images; the test serves
// the reconstructions under the same paths from a local registry.
const publishedRepos = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo"

// registryHost stands for the local registry's address in the goldens.
const registryHost = "REGISTRY"

// TestBumpFromRegistry runs the release flow as a user with registry
// access does: the reconstructions of both newer pairs are pushed to a
// real registry (Debian's docker-registry on loopback) under the published
// repository paths, the copy's BOM names that registry, and bump resolves
// each tag to its digest there, pulls through the cache, and leaves a tree
// bom-check passes offline from that cache. Each summary is compared with
// its golden (go test ./internal/bump -run TestBumpFromRegistry -update).
func TestBumpFromRegistry(t *testing.T) {
	reg := registrytest.Start(t)
	src := realRoot(t)
	for _, p := range []struct{ dir, repo, tag string }{
		{extract.TestdataDir, "nccl-plugin-gpudirecttcpx-dev", "v1.0.16"},
		{extract.TestdataDir, "nccl-plugin-gpudirecttcpx-dev", "v1.0.17"},
		{extract.DaemonTestdataDir, "tcpgpudmarxd-dev", "v1.0.22"},
		{extract.DaemonTestdataDir, "tcpgpudmarxd-dev", "v1.0.23"},
	} {
		img, err := reconstruction.Build(filepath.Join(src, p.dir, p.tag))
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.NewTag(reg.Host + "/gce-ai-infra/gpudirect-tcpxo/" + p.repo + ":" + p.tag)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
	}
	root := copyCheckout(t)
	local := reg.Host + "/gce-ai-infra/gpudirect-tcpxo"
	replaceIn(t, filepath.Join(root, bom.RepoPath), publishedRepos, local)
	cache := t.TempDir()
	g := goldie.New(t, goldie.WithFixtureDir("testdata"), goldie.WithNameSuffix(".md"))
	for _, tag := range []string{"v1.0.16", "v1.0.17"} {
		res, err := Run(ctx, Config{Root: root, Installer: tag, Source: mustSpec(t, "registry"), CacheDir: cache})
		if err != nil {
			t.Fatalf("bump %s: %v", tag, err)
		}
		for _, f := range failures(res.Check) {
			t.Errorf("bump %s: bom-check FAIL %s: %s", tag, f.ID, f.Message)
		}
		if !res.Complete() {
			t.Errorf("bump %s incomplete: missing %v", tag, res.Missing)
		}
		if strings.Contains(res.Summary, "SUBSTITUTE") {
			t.Errorf("bump %s from the registry is reported as a substitute", tag)
		}
		// Read from the registry the pin names: the same bytes as the
		// reconstruction, so the same digest a testdata rehearsal pins.
		want, err := extract.TestdataDigest(src, extract.TestdataDir, tag)
		if err != nil {
			t.Fatal(err)
		}
		b, err := bom.Load(filepath.Join(root, bom.RepoPath))
		if err != nil {
			t.Fatal(err)
		}
		if b.Images.Installer.Digest() != want || !strings.HasPrefix(b.Images.Installer.Reference, local+"/nccl-plugin-gpudirecttcpx-dev:"+tag+"@") {
			t.Fatalf("bump %s pinned %s, want %s:%s@%s", tag, b.Images.Installer.Reference, local, tag, want)
		}
		g.Assert(t, "summary-registry-"+tag, []byte(strings.ReplaceAll(res.Summary, reg.Host, registryHost)))
	}
}

func replaceIn(t testing.TB, p, old, new string) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s does not mention %s", p, old)
	}
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(data), old, new)), 0o644); err != nil {
		t.Fatal(err)
	}
}
