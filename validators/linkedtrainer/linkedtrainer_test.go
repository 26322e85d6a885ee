package linkedtrainer

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// moduleRoot is the tcpxogen checkout, two levels above this package.
const moduleRoot = "../.."

// pinnedVersions reads the trainer version each modfile requires: go.mod's
// and each validators/realize/trainer-*.mod's, the same set copycrds copies.
func pinnedVersions(t *testing.T) []string {
	t.Helper()
	extra, err := filepath.Glob(filepath.Join(moduleRoot, "validators", "realize", "trainer-*.mod"))
	if err != nil {
		t.Fatal(err)
	}
	req := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(Module) + `\s+(v\S+)`)
	var out []string
	for _, mf := range append([]string{filepath.Join(moduleRoot, "go.mod")}, extra...) {
		b, err := os.ReadFile(mf)
		if err != nil {
			t.Fatal(err)
		}
		m := req.FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s requires no %s", mf, Module)
		}
		if v := string(m[1]); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

func TestEmbeddedVersionsArePinnedVersions(t *testing.T) {
	if diff := cmp.Diff(pinnedVersions(t), Versions()); diff != "" {
		t.Errorf("embedded trainer CRD versions differ from the modfiles' (-pinned +embedded); run go generate ./...:\n%s", diff)
	}
}

func TestLinkedVersionHasCRDs(t *testing.T) {
	v := Version()
	if !strings.HasPrefix(v, "v2.") {
		t.Fatalf("Version() = %q, want a v2 release", v)
	}
	files, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	// One CRD per trainer kind the schema proof validates.
	want := []string{"kind: ClusterTrainingRuntime", "kind: TrainingRuntime", "kind: TrainJob"}
	var got []string
	for _, f := range files {
		for _, w := range want {
			if bytes.Contains(f, []byte("\n    "+w+"\n")) {
				got = append(got, w)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("linked trainer %s CRDs (-want kinds +got):\n%s", v, diff)
	}
}

func TestCRDsOfUnknownVersion(t *testing.T) {
	for _, v := range []string{"v0.0.1", "../crds", ""} {
		if _, err := CRDsOf(v); !errors.Is(err, ErrNoCRDs) || !strings.Contains(err.Error(), "go generate") {
			t.Errorf("CRDsOf(%q): error %v, want ErrNoCRDs naming go generate", v, err)
		}
	}
}

// TestEmbeddedCRDsMatchModules compares every embedded CRD with the pinned
// trainer module's file, byte for byte. It needs the go command and the
// trainer modules in the module cache, which every build of this module has;
// a binary-only environment skips it.
func TestEmbeddedCRDsMatchModules(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to locate the module cache: %v", err)
	}
	out, err := exec.Command(goBin, "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	cache := strings.TrimSpace(string(out))
	for _, v := range Versions() {
		// The module path is all lower case, so its escaped form is itself.
		dir := filepath.Join(cache, filepath.FromSlash(Module)+"@"+v, filepath.FromSlash(ModuleCRDDir))
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			t.Logf("trainer %s is not in the module cache (%s); go mod download it to compare", v, dir)
			continue
		}
		paths, err := filepath.Glob(filepath.Join(dir, CRDGlob))
		if err != nil {
			t.Fatal(err)
		}
		var module [][]byte
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			module = append(module, b)
		}
		embedded, err := CRDsOf(v)
		if err != nil {
			t.Fatal(err)
		}
		if len(module) != len(embedded) {
			t.Errorf("trainer %s: %d CRDs embedded, %d in %s; run go generate ./...", v, len(embedded), len(module), dir)
			continue
		}
		for i := range module {
			if !bytes.Equal(module[i], embedded[i]) {
				t.Errorf("trainer %s: embedded %s differs from the module's; run go generate ./...", v, filepath.Base(paths[i]))
			}
		}
	}
}

func TestVersionFromSourcePath(t *testing.T) {
	for in, want := range map[string]string{
		"/root/go/pkg/mod/github.com/kubeflow/trainer/v2@v2.3.0/pkg/runtime/core/core.go": "v2.3.0",
		"github.com/kubeflow/trainer/v2@v2.2.0/pkg/runtime/core/core.go":                  "v2.2.0", // -trimpath
		`C:\mod\github.com\kubeflow\trainer\v2@v2.4.0-rc.1\pkg\runtime\core\core.go`:      "v2.4.0-rc.1",
		"/src/trainer/pkg/runtime/core/core.go":                                           "(devel)",
		"":                                                                                UnknownVersion,
	} {
		if got := versionFromSourcePath(strings.ReplaceAll(in, `\`, "/"), Module); got != want {
			t.Errorf("versionFromSourcePath(%q) = %q, want %q", in, got, want)
		}
	}
}
