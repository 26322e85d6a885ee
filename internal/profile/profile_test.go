package profile

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func evaluate(t *testing.T, script string, opts Options) (*Result, error) {
	t.Helper()
	return Evaluate(context.Background(), "test.sh", []byte(script), opts)
}

func mustEvaluate(t *testing.T, script string, opts Options) *Result {
	t.Helper()
	res, err := evaluate(t, script, opts)
	if err != nil {
		t.Fatalf("Evaluate(%q): %v", script, err)
	}
	return res
}

func vars(kv ...string) []Var {
	out := []Var{}
	for _, s := range kv {
		name, value, _ := strings.Cut(s, "=")
		out = append(out, Var{Name: name, Value: value})
	}
	return out
}

func assertVars(t *testing.T, res *Result, want []Var) {
	t.Helper()
	got := res.Vars
	if got == nil {
		got = []Var{}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("vars:\n got %v\nwant %v", got, want)
	}
}

func TestOrderIsFirstExport(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		want         []Var
	}{
		{"sequence", "export B=1\nexport A=2\nexport C=3\n", vars("B=1", "A=2", "C=3")},
		{"re-export keeps the first position", "export A=1\nexport B=2\nexport A=3\n", vars("A=3", "B=2")},
		{"export of an earlier assignment", "B=1\nexport A=2\nexport B\n", vars("A=2", "B=1")},
		{"export before assignment", "export C\nexport A=1\nC=3\n", vars("A=1", "C=3")},
		{"one statement, source order", "export Z=1 Y=2 X=3\n", vars("Z=1", "Y=2", "X=3")},
		{"declare -x", "declare -x B=1\ndeclare -x A=2\n", vars("B=1", "A=2")},
		{"allexport", "set -a\nQ=1\nP=2\nset +a\nR=3\n", vars("Q=1", "P=2")},
		{"inside a function", "setup() {\n  export N2=b\n  export N1=a\n}\nexport N0=z\nsetup\n", vars("N0=z", "N2=b", "N1=a")},
		{"inside if and loop", "if true; then export I=1; fi\nfor v in a b; do export L=$v; done\n", vars("I=1", "L=b")},
		{"unexported locals are not output", "a=1\nexport B=$a\n", vars("B=1")},
		{"subshell exports stay in the subshell", "( export S=1 )\nx=$(export T=2; echo t)\nexport U=$x\n", vars("U=t")},
		{"exit 0 ends the script", "export A=1\nexit 0\nexport B=2\n", vars("A=1")},
		{"top-level return ends the script", "export A=1\nreturn\nexport B=2\n", vars("A=1")},
		{"exported array is not environment", "export A=(1 2)\nexport B=1\n", vars("B=1")},
		{"export of an unset variable exports nothing", "export NOPE\nexport A=1\n", vars("A=1")},
		{"empty script", "# nothing\n", vars()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assertVars(t, mustEvaluate(t, tc.script, Options{}), tc.want)
		})
	}
}

func TestInitialEnvironment(t *testing.T) {
	t.Setenv("TCPXOGEN_HOST_PROBE", "leaked")
	res := mustEvaluate(t, `
export SEEN_HOST=${TCPXOGEN_HOST_PROBE:-absent}
export SEEN_LIB=$NCCL_LIB_DIR
export SEEN_LD=[$LD_LIBRARY_PATH]
export SEEN_EXTRA=$EXTRA
`, Options{LibDir: "/opt/nccl", Env: []Var{{Name: "EXTRA", Value: "x"}}})
	assertVars(t, res, vars("SEEN_HOST=absent", "SEEN_LIB=/opt/nccl", "SEEN_LD=[]", "SEEN_EXTRA=x"))
}

func TestInputsAppearOnlyWhenChanged(t *testing.T) {
	opts := Options{Env: []Var{{Name: "KEEP", Value: "k"}, {Name: "CHANGE", Value: "c"}}}
	res := mustEvaluate(t, `
export KEEP=$KEEP
export CHANGE=c2
export NCCL_LIB_DIR
export NEW=n
`, opts)
	assertVars(t, res, vars("CHANGE=c2", "NEW=n"))

	res = mustEvaluate(t, "export LD_LIBRARY_PATH=/a:$LD_LIBRARY_PATH\n", Options{Env: []Var{{Name: "LD_LIBRARY_PATH", Value: "/b"}}})
	assertVars(t, res, vars("LD_LIBRARY_PATH=/a:/b"))
	if len(res.Normalized) != 0 {
		t.Errorf("Normalized = %v, want none for a list without empty elements", res.Normalized)
	}
}

func TestDefaultLibDir(t *testing.T) {
	res := mustEvaluate(t, "export X=$NCCL_LIB_DIR\n", Options{})
	assertVars(t, res, vars("X="+DefaultLibDir))
}

func TestPathListsAreNormalized(t *testing.T) {
	res := mustEvaluate(t, `
export LD_LIBRARY_PATH="${NCCL_LIB_DIR}:${LD_LIBRARY_PATH}"
export PYTHONPATH=":a::b:"
export NCCL_TUNER_CONFIG_PATH="${NCCL_LIB_DIR}/tuner.textproto"
export OTHER=":x:"
`, Options{})
	assertVars(t, res, vars(
		"LD_LIBRARY_PATH=/usr/local/nvidia/lib64",
		"PYTHONPATH=a:b",
		"NCCL_TUNER_CONFIG_PATH=/usr/local/nvidia/lib64/tuner.textproto",
		"OTHER=:x:",
	))
	if want := []string{"LD_LIBRARY_PATH", "PYTHONPATH"}; !reflect.DeepEqual(res.Normalized, want) {
		t.Errorf("Normalized = %v, want %v", res.Normalized, want)
	}
}

func TestOptionsValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"relative LibDir", Options{LibDir: "lib64"}, "absolute"},
		{"unclean LibDir", Options{LibDir: "/usr/local/nvidia/lib64/"}, "clean"},
		{"LibDir with colon", Options{LibDir: "/a:/b"}, "':'"},
		{"negative timeout", Options{Timeout: -time.Second}, "negative"},
		{"NCCL_LIB_DIR in Env", Options{Env: []Var{{Name: "NCCL_LIB_DIR", Value: "/x"}}}, "LibDir"},
		{"invalid name", Options{Env: []Var{{Name: "A-B", Value: "x"}}}, "valid shell name"},
		{"duplicate", Options{Env: []Var{{Name: "A", Value: "1"}, {Name: "A", Value: "2"}}}, "twice"},
		{"NUL in value", Options{Env: []Var{{Name: "A", Value: "a\x00b"}}}, "NUL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := evaluate(t, "export A=1\n", tc.opts)
			if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want ErrOptions mentioning %q", err, tc.want)
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	script := `
for n in $(ls /sys/class/net 2>/dev/null | sort); do
  slot=$(cat /sys/class/net/$n/device/uevent | grep SLOT | awk -F= '{print $2}')
done
export B=${slot:-none} A=1
export LD_LIBRARY_PATH=$NCCL_LIB_DIR:$LD_LIBRARY_PATH
`
	first := mustEvaluate(t, script, Options{})
	for range 20 {
		if again := mustEvaluate(t, script, Options{}); !reflect.DeepEqual(first, again) {
			t.Fatalf("results differ between runs:\n%+v\n%+v", first, again)
		}
	}
}

func TestContextCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Evaluate(ctx, "test.sh", []byte("while :; do :; done\n"), Options{})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Fatalf("error = %v, want context.Canceled and not a timeout", err)
	}
}
