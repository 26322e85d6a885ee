package sbomcmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/generated/tcpxo"
	"github.com/tcpxogen/tcpxogen/pipeline/sbom"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

func runSBOM(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var o, e bytes.Buffer
	code := cli.Main(context.Background(), append([]string{"sbom"}, args...), cli.Streams{Out: &o, Err: &e}, Commands())
	return code, o.String(), e.String()
}

func decode(t *testing.T, data string) *cdx.BOM {
	t.Helper()
	var b cdx.BOM
	if err := cdx.NewBOMDecoder(strings.NewReader(data), cdx.BOMFileFormatJSON).Decode(&b); err != nil {
		t.Fatalf("output is not CycloneDX JSON: %v", err)
	}
	return &b
}

func component(b *cdx.BOM, name string) *cdx.Component {
	for i, c := range *b.Components {
		if c.Name == name {
			return &(*b.Components)[i]
		}
	}
	return nil
}

func TestSBOMOnStdout(t *testing.T) {
	code, out, stderr := runSBOM(t)
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stderr != "" {
		t.Errorf("stdout mode wrote to stderr: %q", stderr)
	}
	b := decode(t, out)
	if b.SpecVersion != cdx.SpecVersion1_6 || b.Metadata == nil || b.Metadata.Component == nil || b.Metadata.Component.Name != "torch-distributed-tcpxo" {
		t.Fatalf("not the runtime's 1.6 SBOM: spec %s, metadata %+v", b.SpecVersion, b.Metadata)
	}
	if c := component(b, "nccl"); c == nil || c.Version != tcpxo.NCCLVersion {
		t.Errorf("NCCL core component: %+v", c)
	}
	// The command adds nothing to what the library builds.
	root, err := bom.ResolveRoot("")
	if err != nil {
		t.Fatal(err)
	}
	in, err := sbom.LoadInputs(root)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := sbom.Build(in)
	if err != nil {
		t.Fatal(err)
	}
	want, err := sbom.Encode(doc)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Error("command output differs from sbom.Encode(sbom.Build(...)) for the same tree")
	}
}

func TestSBOMToFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out", "nested")
	path := filepath.Join(dir, "sbom.cdx.json")
	code, out, stderr := runSBOM(t, "-o", path)
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if out != "" {
		t.Errorf("-o also wrote to stdout: %.60q", out)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	decode(t, string(data))
	if !strings.Contains(stderr, path) {
		t.Errorf("stderr %q does not say where the SBOM went", stderr)
	}
	_, stdout, _ := runSBOM(t)
	if string(data) != stdout {
		t.Error("the file differs from the stdout output")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the SBOM (no leftover temp files)", len(entries))
	}
	// Rewriting replaces the file in place.
	if code, _, stderr := runSBOM(t, "--output", path); code != cli.ExitOK {
		t.Fatalf("second write: exit %d: %s", code, stderr)
	}
}

func TestSBOMUsage(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"unknown flag":       {[]string{"--format", "xml"}, cli.ExitUsage, "unknown flag"},
		"stray argument":     {[]string{"extra"}, cli.ExitUsage, "unexpected arguments"},
		"missing -o path":    {[]string{"-o"}, cli.ExitUsage, "needs an argument"},
		"root without a BOM": {[]string{"--root", t.TempDir()}, cli.ExitUsage, "generated"},
		"help":               {[]string{"--help"}, cli.ExitOK, "sbom [--root DIR] [-o FILE]"},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, stderr := runSBOM(t, tc.args...)
			if tc.code == cli.ExitOK { // asked-for help is output: stdout
				out, stderr = stderr, out
			}
			if code != tc.code || out != "" || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stdout %.40q, stderr %q; want exit %d, no stdout, stderr mentioning %q", code, out, stderr, tc.code, tc.want)
			}
		})
	}
}

// copyTree copies the files LoadInputs reads into a scratch root.
func copyTree(t *testing.T) string {
	t.Helper()
	src, err := bom.ResolveRoot("")
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	for _, rel := range []string{bom.RepoPath, bom.ReleasesRepoPath, bom.OverridesRepoPath, generated.FactsFile, generated.GIBFactsFile} {
		data, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func editGenerated(t *testing.T, root, old, new string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(generated.FactsFile))
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(old)) {
		t.Fatalf("%s does not contain %q", generated.FactsFile, old)
	}
	if err := os.WriteFile(p, bytes.Replace(data, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// --root describes the tree it names, not the constants compiled into tcpxogen.
func TestSBOMDescribesTheRootTree(t *testing.T) {
	root := copyTree(t)
	editGenerated(t, root, `NCCLVersion = "`+tcpxo.NCCLVersion+`"`, `NCCLVersion = "2.99.1"`)
	code, out, stderr := runSBOM(t, "--root", root)
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if c := component(decode(t, out), "nccl"); c == nil || c.Version != "2.99.1" {
		t.Errorf("NCCL core component %+v, want the tree's version 2.99.1", c)
	}
}

// Facts extracted for another installer cannot be attributed to the pinned
// one: the command fails (exit 1) and says how to fix it.
func TestSBOMRefusesStaleFacts(t *testing.T) {
	root := copyTree(t)
	editGenerated(t, root, `ProvenancePinned = "`+tcpxo.ProvenancePinned+`"`,
		`ProvenancePinned = "`+strings.Replace(tcpxo.ProvenancePinned, ":v1.0.15@", ":v1.0.14@", 1)+`"`)
	code, out, stderr := runSBOM(t, "--root", root)
	if code != cli.ExitFailure || out != "" || !strings.Contains(stderr, "go generate") {
		t.Fatalf("exit %d, stdout %.40q, stderr %q; want exit 1 naming go generate", code, out, stderr)
	}
}
