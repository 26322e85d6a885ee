package checkcmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// A TrainJob the schema proof rejects is not realized: the API server would
// never create it. Before, a 129-entry env was realized after the schema
// said "at most 128" (and 200,000 entries took 263 s) and the lint exited 1.
func TestCheckTrainJobStopsAtSchemaRejection(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "trainjob-env-debug.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var env strings.Builder
	for i := range 129 {
		fmt.Fprintf(&env, "      - name: VAR_%d\n        value: x\n", i)
	}
	doc := strings.Replace(string(good), "    env:\n", "    env:\n"+env.String(), 1)
	if doc == string(good) {
		t.Fatal("the fixture has no env list to extend")
	}
	p := filepath.Join(t.TempDir(), "big-env.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := runCheck(t, "trainjob", p)
	if code != cli.ExitUsage {
		t.Errorf("exit %d, want 2:\n%s", code, out)
	}
	for _, want := range []string{"FAIL  schema: invalid", "the API server rejects the TrainJob", "nothing was realized"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "launch on trainer") || strings.Contains(out, " ok ") {
		t.Errorf("the rejected TrainJob was realized:\n%s", out)
	}
}

// The TrainJob file goes through the input helper: a FIFO no longer hangs
// the lint, a device no longer fills memory, an oversized file is refused
// with its size (100 MB took 18 s and 520 MB RSS).
func TestCheckTrainJobHostileFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(100 << 20); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{fifo: "is a FIFO", big: "is 104857600 bytes", dir: "is a directory"}
	if _, err := os.Stat("/dev/zero"); err == nil {
		cases["/dev/zero"] = "is a character device"
	}
	for path, want := range cases {
		code, out := runCheck(t, "trainjob", path)
		if code != cli.ExitUsage || !strings.Contains(out, "TrainJob file "+path+" "+want) {
			t.Errorf("check trainjob %s: exit %d, want 2 and %q:\n%s", path, code, want, out)
		}
		if len(out) > 1024 {
			t.Errorf("check trainjob %s printed %d bytes", path, len(out))
		}
	}
}

// A document's kind, name or runtime is echoed as a bounded excerpt with
// look-alikes named: a 900 KB kind was quoted whole.
func TestCheckTrainJobQuotesExcerpts(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ doc, want string }{
		"huge kind":       {"apiVersion: v1\nkind: " + strings.Repeat("K", 900<<10) + "\nmetadata: {name: x}\n", "characters of 921600 bytes"},
		"look-alike kind": {"apiVersion: trainer.kubeflow.org/v1alpha1\nkind: Tr\u0430inJob\nmetadata: {name: x}\n", "U+0430 CYRILLIC SMALL LETTER A"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
		if err := os.WriteFile(p, []byte(tc.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out := runCheck(t, "trainjob", p)
		if code != cli.ExitUsage || !strings.Contains(out, tc.want) || len(out) > 4096 {
			t.Errorf("%s: exit %d, %d bytes of output, want 2, at most 4 KiB and %q:\n%.2000s", name, code, len(out), tc.want, out)
		}
	}
}

// A type error is reported by field, in the API server's words, not as the
// converter's Go type ("unrecognized type: int32").
func TestCheckTrainJobTypeErrorNamesTheField(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "trainjob-env-debug.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(good), "    image: ", "    numNodes: \"two\"\n    image: ", 1)
	p := filepath.Join(t.TempDir(), "type.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := runCheck(t, "trainjob", p)
	line := strings.Count(doc[:strings.Index(doc, "numNodes")], "\n") + 1
	if code != cli.ExitUsage || !strings.Contains(out, fmt.Sprintf("line %d: invalid spec.trainer.numNodes", line)) || strings.Contains(out, "int32") {
		t.Errorf("exit %d, want 2 and the field named without Go types:\n%s", code, out)
	}
}
