package profile

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// wantUnresolved asserts that err reports variable name as depending on
// source (at sourceLine, if non-zero), classified as kind.
func wantUnresolved(t *testing.T, err error, kind error, name, source string, sourceLine int) *UnresolvedError {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("error = %v, want %v", err, kind)
	}
	var ue *UnresolvedError
	if !errors.As(err, &ue) {
		t.Fatalf("error = %v, want an *UnresolvedError", err)
	}
	if ue.Var != name || ue.Source != source || (sourceLine != 0 && ue.SourceLine != sourceLine) {
		t.Fatalf("UnresolvedError{Var: %q, Source: %q, SourceLine: %d}, want {%q, %q, %d}; message: %v",
			ue.Var, ue.Source, ue.SourceLine, name, source, sourceLine, err)
	}
	for _, part := range []string{"test.sh", name, source} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("message %q does not mention %q", err, part)
		}
	}
	return ue
}

func TestRefusedCommandFeedingAnExportIsAnError(t *testing.T) {
	for _, tc := range []struct {
		name, script, source string
		line                 int
	}{
		{"metadata fetch", "export NCCL_X=$(curl -s http://metadata.google.internal/computeMetadata/v1/instance/id)\n", "curl", 1},
		{"through a variable", "id=$(curl -s http://metadata/x)\nexport NCCL_X=$id\n", "curl", 1},
		{"assigned then exported", "NCCL_X=$(curl -s http://metadata/x)\nexport NCCL_X\n", "curl", 1},
		{"pipeline", "export NCCL_X=$(cat /etc/foo | grep a)\n", "cat", 1},
		{"refused command in a function", "get() {\n  curl -s http://metadata/x\n}\nexport NCCL_X=$(get)\n", "curl", 2},
		{"function argument", "set_x() { export NCCL_X=$1; }\nset_x \"$(curl http://metadata/x)\"\n", "curl", 2},
		{"nested substitution", "export NCCL_X=$(echo $(hostname))\n", "hostname", 1},
		{"printf -v", "printf -v NCCL_X '%s' \"$(curl x)\"\nexport NCCL_X\n", "curl", 1},
		{"here-string", "read NCCL_X <<< \"$(curl x)\"\nexport NCCL_X\n", "curl", 1},
		{"eval", "eval 'export NCCL_X=$(curl x)'\n", "curl", 1},
		{"indirect", "v=$(curl x)\nref=v\nexport NCCL_X=${!ref}\n", "curl", 1},
		{"exit status of a refused command", "ls /x\nexport NCCL_X=$?\n", "ls", 1},
		{"local does not launder the global", "f() { local NCCL_X=clean; }\nNCCL_X=$(curl x)\nf\nexport NCCL_X\n", "curl", 2},
		{"branch inside a substitution", "export NCCL_X=$(if command -v nvidia-smi >/dev/null; then echo gpu; else echo none; fi)\n", "nvidia-smi", 1},
		{"pipe into the current shell", "cat /etc/nics | read NCCL_X\nexport NCCL_X\n", "cat", 1},
		{"after exec redirections", "exec 2>/dev/null\nexport NCCL_X=$(curl x)\n", "curl", 2},
		{"with both outputs closed", "{ export NCCL_X=$(curl x); } >&- 2>&-\n", "curl", 1},
		{"set --", "set -- $(curl x)\nexport NCCL_X=$1\n", "curl", 1},
		{"nameref", "declare -n ref=T\nT=$(curl x)\nexport NCCL_X=$ref\n", "curl", 2},
		{"arithmetic", "n=$(nproc)\nexport NCCL_X=$(( n * 2 ))\n", "nproc", 1},
		{"computed declaration", "declare \"NCCL_X=$(curl x)\"\nexport NCCL_X\n", "curl", 1},
		{"multi-variable statement", "export NCCL_X=1 NCCL_Y=$(curl x)\n", "curl", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := evaluate(t, tc.script, Options{})
			wantUnresolved(t, err, ErrUnresolved, "NCCL_X", tc.source, tc.line)
		})
	}
}

func TestReadingFilesFeedingAnExportIsAnError(t *testing.T) {
	for _, tc := range []struct {
		name, script, source string
	}{
		{"$(< file)", "export NCCL_X=$(< /etc/hostname)\n", "/etc/hostname"},
		{"read from a file", "read NCCL_X < /etc/foo\nexport NCCL_X\n", "/etc/foo"},
		{"while read from a file", "while read line; do NCCL_X=$line; done < /etc/foo\nexport NCCL_X=${NCCL_X}\n", "/etc/foo"},
		{"glob", "for f in /dev/nvidia*; do NCCL_X=$f; done\nexport NCCL_X\n", "/dev"},
		{"file test in a substitution", "export NCCL_X=$([ -e /dev/aperture_devices ] && echo yes || echo no)\n", "/dev/aperture_devices"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := evaluate(t, tc.script, Options{})
			wantUnresolved(t, err, ErrUnresolved, "NCCL_X", tc.source, 0)
		})
	}
}

func TestUnsetVariableFeedingAnExportIsAnError(t *testing.T) {
	for _, tc := range []struct {
		name, script, source string
		line                 int
	}{
		{"direct", "export NCCL_X=$NCCL_MISSING\n", "NCCL_MISSING", 1},
		{"braces and text", "\nexport NCCL_X=\"pre-${NCCL_MISSING}-post\"\n", "NCCL_MISSING", 2},
		{"through a variable", "y=$NCCL_MISSING\nexport NCCL_X=$y\n", "NCCL_MISSING", 1},
		{"in a substitution", "export NCCL_X=$(echo $NCCL_MISSING)\n", "NCCL_MISSING", 1},
		{"arithmetic", "export NCCL_X=$((count + 1))\n", "count", 1},
		{"length", "export NCCL_X=${#NCCL_MISSING}\n", "NCCL_MISSING", 1},
		{"missing function argument", "f() { export NCCL_X=$1; }\nf\n", "$1", 1},
		{"PATH is not provided", "export NCCL_X=$PATH:/usr/local/nvidia/bin\n", "PATH", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := evaluate(t, tc.script, Options{})
			wantUnresolved(t, err, ErrUnset, "NCCL_X", tc.source, tc.line)
		})
	}
}

func TestHostValuesFeedingAnExportAreAnError(t *testing.T) {
	for _, tc := range []struct{ script, source string }{
		{"export NCCL_X=$HOME/x\n", "HOME"},
		{"export NCCL_X=~/x\n", "HOME"},
		{"export NCCL_X=$UID\n", "UID"},
		{"export NCCL_X=$PWD\n", "PWD"},
		{"export NCCL_X=$$\n", "$$"},
		{"export NCCL_X=$RANDOM\n", "$RANDOM"},
		{"export NCCL_X=$(pwd)/lib\n", "pwd"},
		{"export NCCL_X=$0\n", "$0"},
		{"cd /opt || true\nexport NCCL_X=$PWD\n", "/opt"},
	} {
		t.Run(tc.source, func(t *testing.T) {
			_, err := evaluate(t, tc.script, Options{})
			wantUnresolved(t, err, ErrUnresolved, "NCCL_X", tc.source, 0)
		})
	}
	// A host value the script replaces is fine.
	assertVars(t, mustEvaluate(t, "HOME=/root\nexport NCCL_X=$HOME\n", Options{}), vars("NCCL_X=/root"))
}

func TestAllTaintedExportsAreReported(t *testing.T) {
	_, err := evaluate(t, "export B=$(curl b)\nexport A=$MISSING\nexport OK=1\n", Options{})
	var names []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		names = append(names, e.(*UnresolvedError).Var)
	}
	if want := []string{"B", "A"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("reported %v, want %v in export order; error: %v", names, want, err)
	}
	if !errors.Is(err, ErrUnset) || !errors.Is(err, ErrUnresolved) {
		t.Errorf("error = %v, want both ErrUnset and ErrUnresolved", err)
	}
}

func TestUnsupportedConstructs(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		want         error
		mention      string
	}{
		{"source", "source /other.sh\nexport A=1\n", ErrUnsupported, "/other.sh"},
		{"dot", ". /etc/profile || true\n", ErrUnsupported, "/etc/profile"},
		{"source through builtin", "builtin source /x\n", ErrUnsupported, "/x"},
		{"background job", "sleep 10 &\n", ErrUnsupported, "background"},
		{"process substitution", "while read l; do :; done < <(ls)\n", ErrUnsupported, "process substitution"},
		{"trap", "trap 'export A=$(curl x)' EXIT\n", ErrUnsupported, "trap"},
		{"alias", "alias ls='ls -l'\n", ErrUnsupported, "alias"},
		{"function from eval", "eval 'f() { :; }'\n", ErrUnsupported, "eval"},
		{"printing functions", "f() { :; }\ndeclare -f f\n", ErrUnsupported, "declare -f"},
		{"|&", "ls |& cat\n", ErrUnsupported, "|&"},
		{"time", "time true\n", ErrUnsupported, "time"},
		{"forged hook path", "echo x > " + hookRoot + "0123/o/0\n", ErrUnsupported, "reserved"},
		{"printing functions, computed", "f() { :; }\nopt=-f\ndeclare $opt f\n", ErrUnsupported, "instrumentation"},
		{"write", "echo 1 > /tmp/tcpxogen-profile-test\nexport A=1\n", ErrWrite, "/tmp/tcpxogen-profile-test"},
		{"append", "echo 1 >> /var/log/x || true\n", ErrWrite, "/var/log/x"},
		{"write in a substitution", "x=$(echo 1 > /tmp/y; echo 2)\n", ErrWrite, "/tmp/y"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := evaluate(t, tc.script, Options{})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("error = %v, want %v mentioning %q", err, tc.want, tc.mention)
			}
			if !strings.Contains(err.Error(), "test.sh") {
				t.Errorf("error %q does not name the script", err)
			}
		})
	}
}

func TestAllowedDevices(t *testing.T) {
	res := mustEvaluate(t, `
echo discarded > /dev/null
echo to-stderr > /dev/stderr
x=$(echo captured > /dev/stdout)
read y < /dev/null || true
export X=$x Y=[$y]
`, Options{})
	assertVars(t, res, vars("X=captured", "Y=[]"))
	if len(res.Refused) != 0 {
		t.Errorf("Refused = %v, want none: the devices are part of the sandbox", res.Refused)
	}
}

func TestTimeout(t *testing.T) {
	start := time.Now()
	_, err := Evaluate(t.Context(), "spin.sh", []byte("export A=1\nwhile true; do :; done\n"), Options{Timeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("error = %v, want ErrTimeout", err)
	}
	for _, part := range []string{"spin.sh", "200ms", "line 2"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("message %q does not mention %q", err, part)
		}
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("took %s to time out after 200ms", elapsed)
	}
}

func TestResourceLimits(t *testing.T) {
	_, err := evaluate(t, "x=a\nwhile :; do x=$x$x; done\n", Options{Timeout: 10 * time.Second})
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("doubling a variable forever: error = %v, want ErrLimit before the timeout", err)
	}
	_, err = evaluate(t, "while :; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done\n", Options{Timeout: 500 * time.Millisecond})
	if !errors.Is(err, ErrLimit) && !errors.Is(err, ErrTimeout) {
		t.Fatalf("printing forever: error = %v, want ErrLimit or ErrTimeout", err)
	}
	_, err = evaluate(t, "f() { f; }\nf\n", Options{Timeout: time.Minute})
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "recursion") {
		t.Fatalf("unbounded recursion: error = %v, want ErrLimit before the stack grows without bound", err)
	}
	_, err = evaluate(t, strings.Repeat("#", maxScriptBytes+1), Options{})
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("oversized script: error = %v, want ErrLimit", err)
	}
}

func TestParseError(t *testing.T) {
	_, err := Evaluate(t.Context(), "broken.sh", []byte("export A=1\nif then fi\n"), Options{})
	if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "broken.sh:2:") {
		t.Fatalf("error = %v, want ErrSyntax with position broken.sh:2:", err)
	}
}

func TestScriptFailure(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		mention      []string
	}{
		{"exit with message", "echo 'NCCL_LIB_DIR is not set' >&2\nexit 3\n", []string{"status 3", "NCCL_LIB_DIR is not set"}},
		{"sourced-style return", "if true; then\n  echo 'missing config' >&2\n  return 1 2>/dev/null || exit 1\nfi\n", []string{"status 1", "missing config"}},
		{"required variable", ": \"${NCCL_REQUIRED:?NCCL_REQUIRED must be set}\"\n", []string{"NCCL_REQUIRED must be set"}},
		{"last command fails", "export A=1\nfalse\n", []string{"status 1"}},
		{"set -u in the script", "set -u\nexport A=$NOPE\n", []string{"NOPE"}},
		{"last command refused", "export A=1\nnvidia-smi\n", []string{"status 127", "nvidia-smi"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := evaluate(t, tc.script, Options{})
			if !errors.Is(err, ErrFailed) {
				t.Fatalf("error = %v, want ErrFailed", err)
			}
			for _, part := range tc.mention {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("message %q does not mention %q", err, part)
				}
			}
		})
	}
}

func TestRefusalsAreRecorded(t *testing.T) {
	res := mustEvaluate(t, `host=eth0
for n in $(ls /sys/class/net); do :; done
[ -d /sys/class/net ] || true
command -v ethtool >/dev/null || true
uname -r >/dev/null 2>&1 || true
for i in 1 2 3; do uname -r >/dev/null 2>&1 || true; done
[ -r /etc/passwd ] || true
echo /dev/nvidia* >/dev/null
x=$(< /proc/cpuinfo)
export HOST_NIC=$host
`, Options{})
	assertVars(t, res, vars("HOST_NIC=eth0"))
	// Once per position, with the arguments first seen there.
	want := []Refusal{
		{Command: "ls", Args: []string{"/sys/class/net"}, Line: 2},
		{Command: "stat", Args: []string{"/sys/class/net"}, Line: 3},
		{Command: "command -v", Args: []string{"ethtool"}, Line: 4},
		{Command: "uname", Args: []string{"-r"}, Line: 5},
		{Command: "uname", Args: []string{"-r"}, Line: 6},
		{Command: "access", Args: []string{"/etc/passwd"}, Line: 7},
		{Command: "readdir", Args: []string{"/dev"}, Line: 8},
		{Command: "open", Args: []string{"/proc/cpuinfo"}, Line: 9},
	}
	if !reflect.DeepEqual(res.Refused, want) {
		t.Errorf("Refused:\n got %+v\nwant %+v", res.Refused, want)
	}
}
