package emit

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sebdah/goldie/v2"

	"github.com/tcpxogen/tcpxogen/generated/tcpxo"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
)

func sample() *facts.Facts {
	return &facts.Facts{
		PluginVersion:         "v1.0.15",
		InstallerImage:        "example.com/installer:v1.0.15@sha256:" + strings.Repeat("a", 64),
		DaemonImage:           "example.com/daemon:v1.0.21@sha256:" + strings.Repeat("b", 64),
		DaemonVersion:         "v1.0.21",
		NCCLVersion:           "2.28.7",
		LibDir:                "/usr/local/nvidia/lib64",
		DefaultProfile:        []facts.EnvVar{{Name: "LD_LIBRARY_PATH", Value: "/usr/local/nvidia/lib64"}, {Name: "NCCL_PROTO", Value: "Simple,LL128"}},
		SimpleProfile:         []facts.EnvVar{{Name: "NCCL_PROTO", Value: "Simple"}, {Name: "NCCL_WEIRD", Value: "a \"quoted\"\nvalue`"}},
		PluginFiles:           []string{"a3plus_tuner_config.textproto", "libnccl-tuner.so"},
		PluginLibraries:       []facts.Library{{Name: "libnccl-net.so", Needed: []string{"libcudart.so.12", "libc.so.6"}}, {Name: "libnccl-tuner.so", Needed: []string{}}},
		Refused:               []string{"nccl-env-profile.sh: ls (line 9)"},
		Normalized:            []string{"LD_LIBRARY_PATH"},
		CUDAVersion:           "12.8.0",
		InstallerEntrypoint:   []string{"/scripts/container_entry.sh"},
		Scripts:               []string{"/scripts/container_entry.sh"},
		SSHDPort:              222,
		AllReducePerfMPI:      "/third_party/nccl-tests-mpi/build/all_reduce_perf",
		DaemonEntrypoint:      []string{"bash", "/fts/entrypoint_rxdm_container.sh"},
		DaemonEntryScript:     "/fts/entrypoint_rxdm_container.sh",
		DaemonEntryScriptMode: 0o644,
		DefaultGuestRules:     []guestconfig.Rule{{Name: "NCCL_PROTO", Value: "Simple,LL128", Policy: "POLICY_ENFORCED"}, {Name: "NCCL_TUNER_PLUGIN", Value: "x \"q\"", Policy: "POLICY_RECOMMENDED"}},
		SimpleGuestRules:      []guestconfig.Rule{{Name: "NCCL_ALGO", Value: "Ring,Tree", Policy: "POLICY_ENFORCED"}},
		DaemonProvenance: facts.ImageProvenance{Pinned: "example.com/daemon:v1.0.21@sha256:" + strings.Repeat("b", 64), Source: "testdata",
			Kind: "testdata", Read: "testdata/daemon/v1.0.21", Digest: "sha256:" + strings.Repeat("f", 64), Substituted: true},
		Provenance: facts.Provenance{
			Pinned: "example.com/installer:v1.0.15@sha256:" + strings.Repeat("a", 64), Source: "testdata", Kind: "testdata",
			Read: "testdata/installer/v1.0.15", Digest: "sha256:" + strings.Repeat("c", 64), Substituted: true,
			DefaultProfileSHA256: strings.Repeat("d", 64), SimpleProfileSHA256: strings.Repeat("e", 64),
		},
	}
}

func TestGoGolden(t *testing.T) {
	out, err := Go("tcpxo", sample())
	if err != nil {
		t.Fatal(err)
	}
	goldie.New(t).Assert(t, "tcpxo", out)
}

func TestGoIsDeterministicAndParses(t *testing.T) {
	a, err := Go("tcpxo", sample())
	if err != nil {
		t.Fatal(err)
	}
	b, err := Go("tcpxo", sample())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two renders of the same facts differ")
	}
	if !bytes.HasPrefix(a, []byte("// "+Header+"\n")) {
		t.Fatalf("output does not start with the generated-code header:\n%s", a[:80])
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "zz_generated.go", a, parser.AllErrors); err != nil {
		t.Fatalf("emitted code does not parse: %v", err)
	}
}

func TestGoEmptyListsStillCompile(t *testing.T) {
	f := sample()
	f.PluginFiles, f.Refused, f.Normalized, f.SimpleProfile = nil, nil, nil, nil
	out, err := Go("tcpxo", f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "x.go", out, 0); err != nil {
		t.Fatalf("emitted code does not parse: %v\n%s", err, out)
	}
}

func TestParseRoundTrips(t *testing.T) {
	want := sample()
	src, err := Go("tcpxo", want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse("x.go", src)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip lost data:\n got %+v\nwant %+v", got, want)
	}
	if _, err := Parse("x.go", bytes.Replace(src, []byte("NCCLVersion ="), []byte("NCCLVersionX ="), 1)); err == nil || !strings.Contains(err.Error(), "NCCLVersion") {
		t.Fatalf("a file missing a constant must fail naming it, got %v", err)
	}
}

// The generated package's Facts is the value the builders consume; it must
// be exactly what Parse reads from the same file, which is what the coupling
// check judges. (Only this test links generated/: emit itself must not.)
func TestGeneratedFactsIsWhatParseReads(t *testing.T) {
	const file = "../../generated/tcpxo/zz_generated.go"
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := Parse(file, src)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(*parsed, tcpxo.Facts()); d != "" {
		t.Errorf("tcpxo.Facts() differs from the facts parsed from %s (-parsed +Facts):\n%s", file, d)
	}
}
