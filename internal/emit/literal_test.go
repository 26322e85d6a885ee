package emit

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
)

// Literal writes every non-zero field, nested ones included, as Go that
// parses; equal facts give equal bytes.
func TestLiteral(t *testing.T) {
	f := &facts.Facts{
		Fabric: "gib", PluginVersion: "v1.1.2", NCCLVersion: "2.30.4", SSHDPort: 222, PluginFilesComplete: true,
		MachineProfiles:   []facts.MachineProfile{{MachineType: "a4-highgpu-8g", Env: []facts.EnvVar{{Name: "NCCL_NET", Value: "gIB"}}}},
		DefaultGuestRules: []guestconfig.Rule{{Name: "NCCL_NET", Value: "gIB", Policy: guestconfig.Enforced}},
		PluginLibraries:   []facts.Library{{Name: "libnccl-net.so", Needed: []string{"libc.so.6"}}},
	}
	src, err := Literal("gib", f)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Literal("gib", f)
	if err != nil || string(again) != string(src) {
		t.Fatalf("second render differs (%v)", err)
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "zz_generated.go", src, 0); err != nil {
		t.Fatalf("output does not parse: %v\n%s", err, src)
	}
	for _, want := range []string{`Fabric:        "gib"`, `SSHDPort:            222`, `MachineType: "a4-highgpu-8g"`, `Policy: "POLICY_ENFORCED"`,
		`Needed: []string{`, "PluginFilesComplete: true", "DO NOT EDIT"} {
		if !strings.Contains(strings.Join(strings.Fields(string(src)), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("output lacks %s:\n%s", want, src)
		}
	}
	if strings.Contains(string(src), "DaemonImage") {
		t.Errorf("a zero field was written:\n%s", src)
	}
}

// ParseLiteral reads back exactly what Literal wrote, for the committed
// gIB facts as for a hand-built value, and refuses a file it cannot read.
func TestParseLiteralRoundTrips(t *testing.T) {
	f := &facts.Facts{
		Fabric: "gib", PluginVersion: "v1.1.2", SSHDPort: 222, PluginFilesComplete: true, DaemonEntryScriptMode: 0o755,
		MachineProfiles:   []facts.MachineProfile{{MachineType: "a4-highgpu-8g", Env: []facts.EnvVar{{Name: "NCCL_NET", Value: "gIB"}, {Name: "X", Value: "a\"b\\c"}}}},
		DefaultGuestRules: []guestconfig.Rule{{Name: "NCCL_NET", Value: "gIB", Policy: guestconfig.Enforced}},
		PluginLibraries:   []facts.Library{{Name: "libnccl-net.so", Needed: []string{"libc.so.6"}}},
		Provenance:        facts.Provenance{Source: "testdata", Substituted: true},
	}
	src, err := Literal("gib", f)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseLiteral("zz_generated.go", src)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(f, got); diff != "" {
		t.Errorf("round trip (-wrote +read):\n%s", diff)
	}
	for _, bad := range []string{"package gib\n", "package gib\nfunc Facts() facts.Facts { return facts.Facts{Nope: 1} }\n", "package gib\nfunc Facts() facts.Facts { return facts.Facts{SSHDPort: \"x\"} }\n"} {
		if _, err := ParseLiteral("zz_generated.go", []byte(bad)); err == nil || !strings.Contains(err.Error(), "go generate") {
			t.Errorf("ParseLiteral(%q) = %v, want an error saying to regenerate", bad, err)
		}
	}
}
