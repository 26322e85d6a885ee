package extractcmd

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/reconstruction"
	"github.com/tcpxogen/tcpxogen/internal/registrytest"
	"github.com/tcpxogen/tcpxogen/pipeline/extract"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// repoRootForTest is the real repository, whose bom/ and testdata/ the
// tests copy into a scratch root so nothing under the checkout changes.
func repoRootForTest(t *testing.T) string {
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

// scratchRoot makes a minimal tcpxogen checkout: go.mod, bom/, testdata/.
func scratchRoot(t *testing.T) string {
	t.Helper()
	real := repoRootForTest(t)
	dst := t.TempDir()
	copyTree(t, filepath.Join(real, "bom"), filepath.Join(dst, "bom"), func(p string) bool { return strings.HasSuffix(p, ".yaml") })
	copyTree(t, filepath.Join(real, extract.TestdataDir), filepath.Join(dst, extract.TestdataDir), nil)
	copyTree(t, filepath.Join(real, extract.DaemonTestdataDir), filepath.Join(dst, extract.DaemonTestdataDir), nil)
	copyTree(t, filepath.Join(real, extract.GIBTestdataDir), filepath.Join(dst, extract.GIBTestdataDir), nil)
	writeFile(t, filepath.Join(dst, "go.mod"), "module github.com/tcpxogen/tcpxogen\n\ngo 1.26.0\n")
	return dst
}

func copyTree(t *testing.T, src, dst string, keep func(string) bool) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case keep != nil && !keep(p):
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = cli.Main(context.Background(), args, cli.Streams{Out: &o, Err: &e}, Commands())
	return code, o.String(), e.String()
}

// snapshot hashes every file under root except the layout (which the test
// itself tampers with), to prove a failed run changed nothing.
func snapshot(t *testing.T, root string, skip string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == skip {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			out[p] = hex.EncodeToString(sum[:])
		} else {
			out[p] = d.Type().String()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", root, err)
	}
	return out
}

func TestExtractTestdataWritesAndReuses(t *testing.T) {
	root := scratchRoot(t)
	code, _, stderr := runCLI(t, "extract", "--root", root, "--source", "testdata", "--cache-dir", "")
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	gen := filepath.Join(root, "generated/tcpxo", GeneratedFile)
	first, err := os.ReadFile(gen)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`PluginVersion = "v1.0.15"`,
		`NCCLVersion = "2.28.7"`,
		`ProvenanceSource = "testdata"`,
		`ProvenanceSubstituted = true`,
		`Name:  "NCCL_FASTRAK_IFNAME"`,
		`Value: "/usr/local/nvidia/lib64"`,
	} {
		if !bytes.Contains(first, []byte(want)) {
			t.Errorf("generated file lacks %q", want)
		}
	}
	if !strings.Contains(stderr, "SUBSTITUTE") {
		t.Errorf("a substitute source must be reported plainly; stderr: %s", stderr)
	}
	// Without --source the recorded source is reused and output is identical.
	code, _, stderr = runCLI(t, "extract", "--root", root, "--cache-dir", "")
	if code != cli.ExitOK {
		t.Fatalf("re-run exit %d: %s", code, stderr)
	}
	second, err := os.ReadFile(gen)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Fatal("re-running extract from the recorded source changed the output")
	}
	if !strings.Contains(stderr, "unchanged") {
		t.Errorf("re-run should report the file unchanged: %s", stderr)
	}
}

// Absolute --bom, --releases and --out are used as given, not joined to
// --root, and the success line names the output as the user wrote it.
func TestExtractAbsolutePaths(t *testing.T) {
	root := scratchRoot(t)
	elsewhere := t.TempDir()
	for _, f := range []string{"bom.yaml", "releases.yaml"} {
		data, err := os.ReadFile(filepath.Join(root, "bom", f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(elsewhere, f), string(data))
	}
	// Without the root's own copies, a path joined to --root cannot load.
	if err := os.RemoveAll(filepath.Join(root, "bom")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "tcpxo")
	code, _, stderr := runCLI(t, "extract", "--root", root, "--source", "testdata", "--cache-dir", "",
		"--bom", filepath.Join(elsewhere, "bom.yaml"), "--releases", filepath.Join(elsewhere, "releases.yaml"), "--out", out)
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	written := filepath.Join(out, GeneratedFile)
	if _, err := os.Stat(written); err != nil {
		t.Fatalf("absolute --out: %v", err)
	}
	if !strings.Contains(stderr, written+" written") {
		t.Errorf("success line does not name %s as given: %s", written, stderr)
	}
}

// The package name comes from --package or from --out's last element, and a
// name that cannot be a Go package fails before any extraction.
func TestExtractPackageName(t *testing.T) {
	root := scratchRoot(t)
	for _, tc := range []struct {
		name    string
		args    []string
		wantPkg string
	}{
		{"derived from out-1", []string{"--out", "out-1"}, "out1"},
		{"given", []string{"--out", "out-2", "--package", "facts"}, "facts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"extract", "--root", root, "--source", "testdata", "--cache-dir", ""}, tc.args...)
			code, _, stderr := runCLI(t, args...)
			if code != cli.ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			src, err := os.ReadFile(filepath.Join(root, tc.args[1], GeneratedFile))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(src, []byte("\npackage "+tc.wantPkg+"\n")) {
				t.Errorf("emitted file is not package %s", tc.wantPkg)
			}
		})
	}
	for name, args := range map[string][]string{
		"underivable": {"--out", "1-2"},
		"keyword":     {"--out", "func"},
		"bad package": {"--package", "my-facts"},
	} {
		t.Run(name, func(t *testing.T) {
			// A root that does not exist: the name must be refused before
			// anything is read.
			args := append([]string{"extract", "--root", filepath.Join(root, "missing"), "--source", "testdata", "--cache-dir", ""}, args...)
			code, stdout, stderr := runCLI(t, args...)
			if code != cli.ExitUsage || stdout != "" || !strings.Contains(stderr, "package") || strings.Contains(stderr, "missing") {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 naming the package before reading --root", code, stdout, stderr)
			}
		})
	}
}

func TestExtractUsageErrors(t *testing.T) {
	root := scratchRoot(t)
	for name, args := range map[string][]string{
		"unknown flag":       {"extract", "--root", root, "--nope"},
		"bad source":         {"extract", "--root", root, "--source", "docker.io/x:latest"},
		"no recorded source": {"extract", "--root", root},
		"stray argument":     {"extract", "--root", root, "--source", "testdata", "extra"},
		"missing bom":        {"extract", "--root", root, "--source", "testdata", "--bom", "nope.yaml"},
	} {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, args...)
			if code != cli.ExitUsage || stdout != "" || stderr == "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 with an error on stderr", code, stdout, stderr)
			}
		})
	}
	if code, _, _ := runCLI(t, "extract", "--help"); code != cli.ExitOK {
		t.Errorf("--help exit %d", code)
	}
}

// hostile describes an installer image that must be refused.
type hostile struct {
	name string
	// top returns extra layers above the reconstruction (may be nil).
	top func(t *testing.T) []v1.Layer
	// tamper mutates the written layout (may be nil).
	tamper func(t *testing.T, layoutDir string, img v1.Image)
	args   []string
	want   string
}

func hostileCases() []hostile {
	return []hostile{
		{name: "dot-dot entry", want: "..", top: entries(reconstruction.Entry{Name: "../../escape.sh", Type: tar.TypeReg, Body: []byte("pwned")})},
		{name: "absolute symlink to a host path", want: "/scripts/nccl-env-profile.sh", top: entries(
			reconstruction.Entry{Name: "scripts/nccl-env-profile.sh", Type: tar.TypeSymlink, Linkname: "/etc/passwd"})},
		{name: "symlink loop", want: "loop", top: entries(
			reconstruction.Entry{Name: "scripts/nccl-env-profile.sh", Type: tar.TypeSymlink, Linkname: "a.sh"},
			reconstruction.Entry{Name: "scripts/a.sh", Type: tar.TypeSymlink, Linkname: "b.sh"},
			reconstruction.Entry{Name: "scripts/b.sh", Type: tar.TypeSymlink, Linkname: "nccl-env-profile.sh"})},
		{name: "oversized file", want: "max-file-bytes", args: []string{"--max-file-bytes", "4096"}, top: entries(
			reconstruction.Entry{Name: "scripts/nccl-env-profile.sh", Type: tar.TypeReg, Body: bytes.Repeat([]byte("# padding\n"), 1000)})},
		{name: "gzip bomb", want: "max-expanded-bytes", args: []string{"--max-expanded-bytes", "33554432"}, top: bomb},
		{name: "missing profile script", want: "/scripts/nccl-env-profile.sh", top: entries(
			reconstruction.Entry{Name: "scripts/.wh.nccl-env-profile.sh", Type: tar.TypeReg})},
		{name: "tampered layer blob", want: "digest", tamper: tamperTopLayer},
		{name: "manifest digest mismatch", want: "digest", tamper: tamperManifest},
	}
}

func entries(es ...reconstruction.Entry) func(t *testing.T) []v1.Layer {
	return func(t *testing.T) []v1.Layer {
		l, err := reconstruction.LayerFromEntries(es)
		if err != nil {
			t.Fatal(err)
		}
		return []v1.Layer{l}
	}
}

// bomb is a ~1 MB gzip layer expanding to 1 GiB of zeros.
func bomb(t *testing.T) []v1.Layer {
	var tarBuf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&tarBuf, gzip.BestCompression)
	tw := tar.NewWriter(gz)
	const size = 1 << 30
	if err := tw.WriteHeader(&tar.Header{Name: "zeros.bin", Typeflag: tar.TypeReg, Size: size, Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	zero := make([]byte, 1<<20)
	for range size / len(zero) {
		tw.Write(zero)
	}
	tw.Close()
	gz.Close()
	return []v1.Layer{static.NewLayer(tarBuf.Bytes(), types.OCILayer)}
}

func blobPath(dir string, h v1.Hash) string {
	return filepath.Join(dir, "blobs", h.Algorithm, h.Hex)
}

// flipByte changes one byte in place, keeping the size, so only the digest
// check can notice.
func flipByte(t *testing.T, p string, at func(int) int) {
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data[at(len(data))] ^= 0x01
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func tamperTopLayer(t *testing.T, dir string, img v1.Image) {
	layers, _ := img.Layers()
	d, _ := layers[len(layers)-1].Digest()
	flipByte(t, blobPath(dir, d), func(n int) int { return n / 2 })
}

func tamperManifest(t *testing.T, dir string, img v1.Image) {
	d, _ := img.Digest()
	p := blobPath(dir, d)
	data, _ := os.ReadFile(p)
	// Same length, still valid JSON: only the digest can tell.
	data = bytes.Replace(data, []byte(`"schemaVersion":2`), []byte(`"schemaVersion":3`), 1)
	os.WriteFile(p, data, 0o644)
}

func TestExtractRefusesHostileImages(t *testing.T) {
	real := repoRootForTest(t)
	tree := filepath.Join(real, extract.TestdataDir, "v1.0.15")
	base, err := reconstruction.TreeLayers(tree)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := reconstruction.LoadConfig(tree)
	if err != nil {
		t.Fatal(err)
	}
	for _, hc := range hostileCases() {
		t.Run(hc.name, func(t *testing.T) {
			root := scratchRoot(t)
			outside := t.TempDir()
			layers := append([]v1.Layer(nil), base...)
			if hc.top != nil {
				layers = append(layers, hc.top(t)...)
			}
			img, err := reconstruction.Image(cfg, layers...)
			if err != nil {
				t.Fatal(err)
			}
			layoutDir := filepath.Join(root, "layout")
			p, err := layout.Write(layoutDir, empty.Index)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.AppendImage(img); err != nil {
				t.Fatal(err)
			}
			if hc.tamper != nil {
				hc.tamper(t, layoutDir, img)
			}
			gen := filepath.Join(root, "generated/tcpxo", GeneratedFile)
			writeFile(t, gen, "// previous output\npackage tcpxo\n")
			before := snapshot(t, root, layoutDir)
			beforeOutside := snapshot(t, outside, "")

			args := append([]string{"extract", "--root", root, "--source", "oci-layout:layout", "--daemon-source", "testdata", "--cache-dir", filepath.Join(outside, "cache")}, hc.args...)
			code, stdout, stderr := runCLI(t, args...)
			if code != cli.ExitFailure {
				t.Fatalf("exit %d, want 1; stderr: %s", code, stderr)
			}
			if stdout != "" || !strings.Contains(stderr, hc.want) {
				t.Fatalf("stderr %q does not mention %q (stdout %q)", stderr, hc.want, stdout)
			}
			t.Logf("stderr: %s", stderr)
			assertSame(t, before, snapshot(t, root, layoutDir), "repository")
			assertSame(t, beforeOutside, snapshot(t, outside, ""), "outside directory")
		})
	}
}

func assertSame(t *testing.T, before, after map[string]string, where string) {
	t.Helper()
	var diffs []string
	for p, h := range after {
		if before[p] != h {
			diffs = append(diffs, "changed or created: "+p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			diffs = append(diffs, "removed: "+p)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Fatalf("a failed extract touched the %s:\n%s", where, strings.Join(diffs, "\n"))
	}
}

// TestExtractRegistryCorruptBlob: a layer corrupted in registry storage
// fails the run, leaves the generated file alone and caches nothing under
// the bad digest; the intact image extracts through the same path.
func TestExtractRegistryCorruptBlob(t *testing.T) {
	reg := registrytest.Start(t)
	real := repoRootForTest(t)
	img, err := reconstruction.Build(filepath.Join(real, extract.TestdataDir, "v1.0.15"))
	if err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag(reg.Ref("tcpxo/installer:v1.0.15"))
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	ref := tag.Context().String() + "@" + d.String()

	root := scratchRoot(t)
	cache := t.TempDir()
	code, _, stderr := runCLI(t, "extract", "--root", root, "--source", ref, "--daemon-source", "testdata", "--cache-dir", cache)
	if code != cli.ExitOK {
		t.Fatalf("intact image: exit %d: %s", code, stderr)
	}
	gen := filepath.Join(root, "generated/tcpxo", GeneratedFile)
	good, _ := os.ReadFile(gen)
	if !bytes.Contains(good, []byte(`ProvenanceKind = "registry-substitute"`)) {
		t.Fatal("registry substitute not recorded in provenance")
	}

	layers, _ := img.Layers()
	top, _ := layers[len(layers)-1].Digest()
	flipByte(t, reg.BlobPath(top), func(n int) int { return n / 2 })
	root2 := scratchRoot(t)
	writeFile(t, filepath.Join(root2, "generated/tcpxo", GeneratedFile), "// previous output\npackage tcpxo\n")
	before := snapshot(t, root2, "")
	cache2 := t.TempDir()
	code, _, stderr = runCLI(t, "extract", "--root", root2, "--source", ref, "--daemon-source", "testdata", "--cache-dir", cache2)
	if code != cli.ExitFailure || !strings.Contains(stderr, top.Hex[:12]) {
		t.Fatalf("corrupt blob: exit %d, stderr %q; want exit 1 naming the layer", code, stderr)
	}
	assertSame(t, before, snapshot(t, root2, ""), "repository")
	if _, err := os.Stat(filepath.Join(cache2, "blobs", "sha256", top.Hex)); !os.IsNotExist(err) {
		t.Fatalf("the corrupt layer was cached: %v", err)
	}
}
