package extract

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/imagesource"
	"github.com/tcpxogen/tcpxogen/internal/reconstruction"
	"github.com/tcpxogen/tcpxogen/internal/registrytest"
)

// syntheticBaseSize makes the pushed image big enough that reading it whole
// would show up, as the real multi-GB CUDA base would.
const syntheticBaseSize = 210 << 20

func repoRoot(t *testing.T) string {
	t.Helper()
	wd, _ := os.Getwd()
	root, err := bom.FindRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func loadBOM(t *testing.T, root string) *bom.BOM {
	t.Helper()
	b, _, err := bom.LoadAll(filepath.Join(root, bom.DefaultPath()), filepath.Join(root, bom.DefaultReleasesPath()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRegistryEndToEnd pushes the reconstruction on a 210 MB base to a real
// registry and extracts through the production remote path: the result must
// equal the offline extraction, read a few KB, and a warm re-run must make
// no registry requests at all.
func TestRegistryEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("pushes a 210 MB image")
	}
	root := repoRoot(t)
	b := loadBOM(t, root)
	reg := registrytest.Start(t)

	base, err := reconstruction.SyntheticBase(syntheticBaseSize, 42)
	if err != nil {
		t.Fatal(err)
	}
	img, err := reconstruction.Build(filepath.Join(root, TestdataDir, b.Images.Installer.Version), base)
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag(reg.Host + "/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:" + b.Images.Installer.Version)
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	ref := tag.Context().String() + "@" + d.String()

	offline, err := Run(context.Background(), Config{Root: root, BOM: b, Source: mustSpec(t, SourceTestdata), DaemonSource: mustSpec(t, SourceTestdata)})
	if err != nil {
		t.Fatal(err)
	}

	cache := t.TempDir()
	var cold imagesource.Stats
	res, err := Run(context.Background(), Config{Root: root, BOM: b, Source: mustSpec(t, ref), DaemonSource: mustSpec(t, SourceTestdata), CacheDir: cache, Stats: &cold})
	if err != nil {
		t.Fatal(err)
	}
	f, p := res.Facts, res.Facts.Provenance
	if p.Kind != imagesource.KindRegistrySubstitute || !p.Substituted || p.Pinned != b.Images.Installer.Reference || p.Digest != d.String() {
		t.Fatalf("provenance %+v: want a recorded substitute of %s read at %s", p, b.Images.Installer.Reference, d)
	}
	if !slices.Equal(f.DefaultProfile, offline.Facts.DefaultProfile) || !slices.Equal(f.SimpleProfile, offline.Facts.SimpleProfile) ||
		!slices.Equal(f.PluginFiles, offline.Facts.PluginFiles) || f.NCCLVersion != offline.Facts.NCCLVersion {
		t.Fatal("extraction through the registry differs from the offline extraction of the same tree")
	}
	if got := cold.Snapshot().Bytes; got > 1<<20 {
		t.Fatalf("top-down extraction fetched %d bytes from a %d-byte image; want < 1 MiB", got, syntheticBaseSize)
	}
	if res.Scan.LayersRead >= res.Scan.LayersTotal {
		t.Fatalf("read %d of %d layers: the synthetic base must not be read", res.Scan.LayersRead, res.Scan.LayersTotal)
	}

	var warm imagesource.Stats
	if _, err := Run(context.Background(), Config{Root: root, BOM: b, Source: mustSpec(t, ref), DaemonSource: mustSpec(t, SourceTestdata), CacheDir: cache, Stats: &warm}); err != nil {
		t.Fatal(err)
	}
	if s := warm.Snapshot(); s.Requests != 0 || s.Bytes != 0 {
		t.Fatalf("warm re-run made %d requests (%d bytes); want none", s.Requests, s.Bytes)
	}
}

func mustSpec(t *testing.T, s string) SourceSpec {
	t.Helper()
	spec, err := ParseSource(s)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}
