package busbw

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withLines is a published log with lines inserted before its parameter
// line, where NCCL's init output sits; the file itself is left as published.
func withLines(t *testing.T, name string, lines ...string) *Log {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(publishedDir, name))
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(data, []byte("# nThread"))
	if at < 0 {
		t.Fatalf("%s has no parameter line", name)
	}
	var b bytes.Buffer
	b.Write(data[:at])
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	b.Write(data[at:])
	l, err := Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func checkOf(t *testing.T, v Verdict, name string) Check {
	t.Helper()
	for _, c := range v.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s check in %+v", name, v.Checks)
	return Check{}
}

// The round-3 facts' symptom of a worker built for the wrong CUDA major
// ("Error loading libnccl-net_internal.so: libcudart.so.12 (or .13): the
// soname names what the plugin wanted") fails the run and names the major
// the worker image must have. The base log passes as published.
func TestCUDAMismatchIsNamed(t *testing.T) {
	floor, err := ParseFloor(">= 250")
	if err != nil {
		t.Fatal(err)
	}
	const base = "gke-a3mega-2node-mpirun.log"
	if v := Evaluate(withLines(t, base), floor, ""); !v.Pass {
		t.Fatalf("the published log fails on its own: %v", v.Problems)
	}
	for _, major := range []string{"12", "13"} {
		l := withLines(t, base,
			"a3mega-vm-7xq2:7012:7012 [0] NCCL INFO NET/Plugin: Loaded net plugin libnccl-net.so",
			"a3mega-vm-7xq2:7012:7012 [0] NCCL WARN Error loading libnccl-net_internal.so: libcudart.so."+major+": cannot open shared object file: No such file or directory",
			"a3mega-vm-7xq2:7013:7013 [1] NCCL WARN Error loading libnccl-net_internal.so: libcudart.so."+major+": cannot open shared object file: No such file or directory")
		v := Evaluate(l, floor, "")
		c := checkOf(t, v, CheckCUDA)
		if v.Pass || c.Status != Failed {
			t.Fatalf("CUDA %s: pass %v, check %+v; want a failed %s", major, v.Pass, c, CheckCUDA)
		}
		for _, want := range []string{"libcudart.so." + major, "the worker image's CUDA major must be " + major, "images.worker.cudaMajor", "Line "} {
			if !strings.Contains(c.Message, want) {
				t.Errorf("CUDA %s: message %q lacks %q", major, c.Message, want)
			}
		}
		if strings.Count(c.Message, "libcudart.so."+major) != 1 {
			t.Errorf("two ranks logging the same soname are one finding: %q", c.Message)
		}
	}
}

// "NCCL WARN NCCL/NET (shim) mismatch enforced" marks an enforced
// guest-config value violated (round-3 facts, "Log strings"); before v1.0.16
// the checker named the plugin uninitialized_shim_v7. Either fails the run
// and points at the guest config's rules.
func TestEnforcedMismatchIsNamed(t *testing.T) {
	floor, err := ParseFloor(">= 250")
	if err != nil {
		t.Fatal(err)
	}
	for _, plugin := range []string{"shim", "uninitialized_shim_v7"} {
		line := "a3mega-vm-7xq2:7012:7012 [0] NCCL WARN NCCL/NET (" + plugin + ") mismatch enforced NCCL_PROTO"
		v := Evaluate(withLines(t, "gke-a3mega-2node-mpirun.log", line, line, line, line, line), floor, "")
		c := checkOf(t, v, CheckGuest)
		if v.Pass || c.Status != Failed {
			t.Fatalf("%s: pass %v, check %+v; want a failed %s", plugin, v.Pass, c, CheckGuest)
		}
		for _, want := range []string{"enforced value violated", "(" + plugin + ") mismatch enforced", "What a workload may tune", "tcpxogen check trainjob"} {
			if !strings.Contains(c.Message, want) {
				t.Errorf("%s: message %q lacks %q", plugin, c.Message, want)
			}
		}
		if n := strings.Count(c.Message, "mismatch enforced"); n != maxEnforcedShown {
			t.Errorf("%s: %d warnings quoted, want the first %d of 5", plugin, n, maxEnforcedShown)
		}
	}
}
