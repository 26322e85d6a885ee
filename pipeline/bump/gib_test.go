package bump

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/internal/emit"
	"github.com/tcpxogen/tcpxogen/pipeline/extract"
)

// The offline rehearsal of a gIB bump: the pinned release re-pinned by the
// digests of the bundled reconstructions (a SUBSTITUTE, and the summary and
// provenance say so), generated/gib re-extracted from them, TCPXO's pins
// and facts untouched, bom-check run on the written tree.
func TestBumpGIBRehearsal(t *testing.T) {
	root := copyCheckout(t)
	read := func(rel string) []byte {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	tcpxo := read(generated.FactsFile)
	res, err := Run(ctx, Config{Root: root, Fabric: "gib", Installer: "v1.1.2", Source: mustSpec(t, "testdata")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := bom.Parse(bom.RepoPath, read(bom.RepoPath))
	if err != nil {
		t.Fatal(err)
	}
	instDigest, err := extract.TestdataDigest(root, extract.GIBTestdataDir, "v1.1.2")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(b.Images.GIBInstaller.Reference, "@"+instDigest) {
		t.Errorf("gibInstaller %s, want the reconstruction's digest %s", b.Images.GIBInstaller.Reference, instDigest)
	}
	f, err := emit.ParseLiteral(generated.GIBFactsFile, read(generated.GIBFactsFile))
	if err != nil {
		t.Fatal(err)
	}
	if f.InstallerImage != b.Images.GIBInstaller.Reference || !f.Provenance.Substituted {
		t.Errorf("generated gIB facts pin %s (substituted %v), want the re-pinned %s read as a substitute", f.InstallerImage, f.Provenance.Substituted, b.Images.GIBInstaller.Reference)
	}
	if string(read(generated.FactsFile)) != string(tcpxo) {
		t.Error("a gIB bump rewrote the TCPXO facts")
	}
	if res.Check == nil || len(failures(res.Check)) > 0 {
		t.Errorf("bom-check on the bumped tree: %+v", failures(res.Check))
	}
	for _, w := range []string{"tcpxogen bump --fabric gib --installer v1.1.2 --source testdata", "SUBSTITUTE", "a4-highgpu-8g (14 variables): unchanged", "- `bom/bom.yaml`"} {
		if !strings.Contains(res.Summary, w) {
			t.Errorf("summary lacks %q:\n%s", w, res.Summary)
		}
	}
}

// A release the notes do not publish a digest for, an unknown tag or
// TCPXO's daemon flag is bad input, and nothing is written.
func TestBumpGIBRefuses(t *testing.T) {
	root := copyCheckout(t)
	was := snapshot(t, root)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Installer: "v1.1.1"}, "publish no digest"},
		{Config{Installer: "v1.1.9"}, `"v1.1.9" is not a gIB release`},
		{Config{Installer: "v1.1.2", DaemonSource: mustSpec(t, "testdata")}, "--daemon-source is TCPXO's"},
		{Config{Installer: "v1.1.2", Rollback: true}, "drop --rollback"},
	} {
		tc.cfg.Root, tc.cfg.Fabric, tc.cfg.Source = root, "gib", mustSpec(t, "testdata")
		_, err := Run(ctx, tc.cfg)
		var input *InputError
		if !errors.As(err, &input) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want bad input naming %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := Run(ctx, Config{Root: root, Fabric: "infiniband", Installer: "v1.1.2"}); err == nil || !strings.Contains(err.Error(), "use one of tcpxo, gib") {
		t.Errorf("unknown fabric: %v", err)
	}
	if now := snapshot(t, root); !equalTrees(was, now) {
		t.Error("a refused bump changed the tree")
	}
}
