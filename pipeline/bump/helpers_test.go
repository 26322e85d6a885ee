package bump

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/internal/emit"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/pipeline/docgen"
	"github.com/tcpxogen/tcpxogen/pipeline/extract"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/admission"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
	"github.com/tcpxogen/tcpxogen/runtimes/deploy"
	"github.com/tcpxogen/tcpxogen/validators/bomcheck"
)

func realRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := bom.FindRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// checkoutParts are the files a bump reads or rewrites, repo-relative:
// the reviewed inputs, the generated file, every golden, the pages the
// generated docs are spliced into and the matrices they are built from.
func checkoutParts(t testing.TB, src string) []string {
	t.Helper()
	rels := []string{"go.mod", bom.RepoPath, bom.ReleasesRepoPath, bom.OverridesRepoPath, generated.FactsFile,
		runtimes.GoldenRuntime, runtimes.GoldenComponents, benchmark.GoldenPath, docgen.CompatDoc, emit.FixtureGolden,
		admission.GoldenPath, admission.GoldenEnforcePath, admission.GoldenGIBPath, admission.GoldenGIBEnforcePath, generated.GIBFactsFile, runtimes.GoldenRDMAComponents}
	for _, mt := range fabric.GIB.MachineTypeNames() {
		rels = append(rels, runtimes.GoldenRDMARuntime(mt), runtimes.GoldenRDMABenchmark(mt))
	}
	rels = append(rels, bomcheck.DocFiles...)
	compat, err := filepath.Glob(filepath.Join(src, "validators/realize/testdata/compat-*.json"))
	if err != nil || len(compat) == 0 {
		t.Fatalf("no realization matrices under %s: %v", src, err)
	}
	for _, p := range compat {
		rel, _ := filepath.Rel(src, p)
		rels = append(rels, filepath.ToSlash(rel))
	}
	for _, tree := range append([]string{extract.TestdataDir, extract.DaemonTestdataDir, extract.GIBTestdataDir, extract.GIBDiagnosticTestdataDir}, deploy.GoldenDirs()...) {
		err := filepath.WalkDir(filepath.Join(src, tree), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			rels = append(rels, filepath.ToSlash(rel))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return rels
}

// copyCheckout copies the parts of the real checkout a bump needs into a
// temporary directory, so no test touches the worktree's tracked files.
func copyCheckout(t testing.TB) string {
	t.Helper()
	src, dst := realRoot(t), t.TempDir()
	for _, rel := range checkoutParts(t, src) {
		from, to := filepath.Join(src, filepath.FromSlash(rel)), filepath.Join(dst, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(from)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			link, err := os.Readlink(from)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(link, to); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// snapshot reads every file under root, so a test can prove nothing changed.
func snapshot(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustSpec(t testing.TB, s string) extract.SourceSpec {
	t.Helper()
	spec, err := extract.ParseSource(s)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func failures(rep *bomcheck.Report) []bomcheck.Result {
	var out []bomcheck.Result
	if rep == nil {
		return nil
	}
	for _, r := range rep.Results {
		if r.Status == bomcheck.Fail {
			out = append(out, r)
		}
	}
	return out
}

var ctx = context.Background()
