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
)

func sample() *facts.Facts { return FixtureFacts() }

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
