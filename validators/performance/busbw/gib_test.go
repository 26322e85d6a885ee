package busbw

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The gIB logs are reconstructions (testdata/gib/README.md): no published
// gIB nccl-tests log exists. The network lines follow NCCL's source
// (NVIDIA/nccl at 5067397c): src/init.cc prints
// INFO(NCCL_INIT, "Using network %s", comm->ncclNet->name) once the network
// is chosen; the built-in networks are named "IB"
// (src/transport/net_ib/common.cc, ncclNetIb) and "Socket"
// (src/transport/net_socket.cc, ncclNetSocket); NCCL_NET picks the network
// whose name it equals (src/plugin/net.cc, strcasecmp on ncclNet->name), so
// NCCL_NET=gIB runs print "Using network gIB".
var gibDir = filepath.Join("testdata", "gib")

func gibLog(t *testing.T, name string, edit func(string) string) *Log {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(gibDir, name))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if edit != nil {
		if text = edit(text); text == string(data) {
			t.Fatalf("%s: the edit changed nothing", name)
		}
	}
	l, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return l
}

func gib(t *testing.T) Fabric {
	t.Helper()
	f, err := LookupFabric("gib")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestGIBRunPasses(t *testing.T) {
	l := gibLog(t, "a3ultra-2node-gib.log", nil)
	v := EvaluateFabric(l, mustFloor(t, ">= 300"), "", gib(t))
	if !v.Pass || v.Fabric != "gib" {
		t.Fatalf("pass %v, fabric %q, problems %v; want a pass judged for gib", v.Pass, v.Fabric, v.Problems)
	}
	if c := check(t, v, CheckNetwork); c.Status != Passed || c.Message != "NCCL used gIB (GPUDirect-RDMA) for inter-node traffic." {
		t.Errorf("network check %+v", c)
	}
	// No gIB plugin version line is known: unchecked, never passed.
	if c := check(t, v, CheckPlugin); c.Status != Skipped || !strings.Contains(c.Message, "gIB plugin") {
		t.Errorf("plugin check %+v, want skipped naming the gIB plugin", c)
	}
	if c := check(t, v, CheckGuest); c.Status != Passed || !strings.Contains(c.Message, "only a real gIB log can confirm it") {
		t.Errorf("guest check %+v, want passed and saying the wording is assumed", c)
	}
	// The same log judged for TCPXO fails: gIB is not FasTrak.
	if v := Evaluate(l, mustFloor(t, ">= 300"), "v1.0.15"); v.Pass || problemsContaining(v, "NCCL used gIB, not FasTrak") != 1 {
		t.Errorf("judged for tcpxo: pass %v, problems %v", v.Pass, v.Problems)
	}
}

func TestGIBFallbacksFail(t *testing.T) {
	fix := []string{"nccl-rdma-installer DaemonSet", "/usr/local/gib", "NCCL_NET=gIB"}
	for _, tc := range []struct {
		name string
		edit func(string) string
		want []string
	}{
		{"IB", func(s string) string { return strings.ReplaceAll(s, "Using network gIB", "Using network IB") },
			[]string{"NCCL used IB, not gIB", "NCCL's built-in RDMA transport"}},
		{"Socket", func(s string) string { return strings.ReplaceAll(s, "Using network gIB", "Using network Socket") },
			[]string{"NCCL used Socket: inter-node traffic between the 2 nodes went over TCP;"}},
		{"Socket on one node", func(s string) string {
			return strings.Replace(s, "a3u-node-1:4200:4200 [0] NCCL INFO Using network gIB", "a3u-node-1:4200:4200 [0] NCCL INFO Using network Socket", 1)
		}, []string{"NCCL used Socket on some ranks (gIB on others)"}},
		{"another plugin", func(s string) string { return strings.ReplaceAll(s, "Using network gIB", "Using network FasTrak") },
			[]string{"NCCL used FasTrak, not gIB"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := EvaluateFabric(gibLog(t, "a3ultra-2node-gib.log", tc.edit), mustFloor(t, ">= 300"), "", gib(t))
			c := check(t, v, CheckNetwork)
			if v.Pass || c.Status != Failed {
				t.Fatalf("pass %v, network check %+v; want a failed network check", v.Pass, c)
			}
			for _, want := range append(tc.want, fix...) {
				if !strings.Contains(c.Message, want) {
					t.Errorf("message %q lacks %q", c.Message, want)
				}
			}
			if len(v.Problems) != 1 {
				t.Errorf("problems %v: the fallback is the only one (the busbw is the reconstruction's)", v.Problems)
			}
		})
	}
}

// Without "Using network" lines nothing shows gIB carried the traffic: for
// gib that fails, where TCPXO's judgement skips (and stays as it was).
func TestGIBWithoutNetworkLineIsNotProof(t *testing.T) {
	noNetwork := func(s string) string {
		var keep []string
		for _, line := range strings.Split(s, "\n") {
			if !strings.Contains(line, "Using network") {
				keep = append(keep, line)
			}
		}
		return strings.Join(keep, "\n")
	}
	l := gibLog(t, "a3ultra-2node-gib.log", noNetwork)
	v := EvaluateFabric(l, mustFloor(t, ">= 300"), "", gib(t))
	c := check(t, v, CheckNetwork)
	if v.Pass || c.Status != Failed {
		t.Fatalf("pass %v, network check %+v; want failed", v.Pass, c)
	}
	for _, want := range []string{"does not say which network NCCL used", "nothing proves gIB carried the traffic", "IB or Socket", "NCCL_DEBUG=INFO"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("message %q lacks %q", c.Message, want)
		}
	}
	tcpxo := Evaluate(l, mustFloor(t, ">= 300"), "v1.0.15")
	if c := check(t, tcpxo, CheckNetwork); c.Status != Skipped {
		t.Errorf("judged for tcpxo the same log's network check is %+v, want skipped as before", c)
	}
}

// The guest config checker's abort: the reconstruction's line is our
// belief (TCPXO's checker's wording; README.md), so the recogniser is
// TCPXO's and does not depend on what precedes "NCCL WARN" (NCCL 2.30's
// logger adds "file:line (func)" there, src/debug.cc).
func TestGIBCheckerAbortNamesTheVariable(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(string) string
	}{
		{"as reconstructed", nil},
		{"with the logger's file and function", func(s string) string {
			return strings.ReplaceAll(s, "[0] NCCL WARN NCCL/NET", "[0] checker.cc:57 (check) NCCL WARN NCCL/NET")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := gibLog(t, "a3ultra-2node-checker-abort.log", tc.edit)
			if want := []string{"NCCL_CROSS_NIC"}; !reflect.DeepEqual(l.EnforcedVars, want) {
				t.Fatalf("EnforcedVars = %v, want %v (two ranks naming one variable are one)", l.EnforcedVars, want)
			}
			v := EvaluateFabric(l, mustFloor(t, ">= 300"), "", gib(t))
			c := check(t, v, CheckGuest)
			if v.Pass || c.Status != Failed {
				t.Fatalf("pass %v, guest check %+v; want failed", v.Pass, c)
			}
			for _, want := range []string{"gIB's guest config checker aborted the run on enforced variable NCCL_CROSS_NIC", "set NCCL_CROSS_NIC to the value", "NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE", "line "} {
				if !strings.Contains(c.Message, want) {
					t.Errorf("message %q lacks %q", c.Message, want)
				}
			}
			// The run stopped at init: no table, and no network line, which
			// then proves nothing either way.
			if problemsContaining(v, "The results table is empty") != 1 || len(v.Problems) != 2 {
				t.Errorf("problems %v: want the empty table and the checker's abort", v.Problems)
			}
			if c := check(t, v, CheckNetwork); c.Status != Skipped || !strings.Contains(c.Message, "nothing was measured") {
				t.Errorf("network check %+v, want skipped: nothing was measured", c)
			}
		})
	}
}

func TestGIBCheckerLineWithoutVariable(t *testing.T) {
	l := gibLog(t, "a3ultra-2node-checker-abort.log", func(s string) string {
		return strings.ReplaceAll(s, "mismatch enforced NCCL_CROSS_NIC", "mismatch enforced")
	})
	c := check(t, EvaluateFabric(l, mustFloor(t, ">= 300"), "", gib(t)), CheckGuest)
	if c.Status != Failed || !strings.Contains(c.Message, "found an enforced value violated") || !strings.Contains(c.Message, "names no NCCL_ variable") {
		t.Errorf("guest check %+v", c)
	}
}

// Several variables are named, each once, in order.
func TestEnforcedVarsAreDistinctAndOrdered(t *testing.T) {
	in := params + "a:1:1 [0] NCCL WARN NCCL/NET (shim) mismatch enforced NCCL_PROTO\n" +
		"b:2:2 [0] NCCL WARN NCCL/NET (shim) mismatch enforced NCCL_CROSS_NIC\n" +
		"a:1:1 [1] NCCL WARN NCCL/NET (shim) mismatch enforced NCCL_PROTO\n" +
		"#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong\n"
	l, err := Parse(bytes.NewBufferString(in))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"NCCL_PROTO", "NCCL_CROSS_NIC"}; !reflect.DeepEqual(l.EnforcedVars, want) {
		t.Errorf("EnforcedVars = %v, want %v", l.EnforcedVars, want)
	}
	c := check(t, EvaluateFabric(l, mustFloor(t, "300"), "", gib(t)), CheckGuest)
	if !strings.Contains(c.Message, "on enforced variables NCCL_PROTO, NCCL_CROSS_NIC") {
		t.Errorf("message %q", c.Message)
	}
}

func TestLookupFabric(t *testing.T) {
	if got := FabricNames(); !reflect.DeepEqual(got, []string{"tcpxo", "gib"}) {
		t.Errorf("FabricNames() = %v, want tcpxo first", got)
	}
	f, err := LookupFabric(DefaultFabric)
	if err != nil || f.Network != FasTrak {
		t.Errorf("LookupFabric(%q) = %+v, %v", DefaultFabric, f, err)
	}
	if _, err := LookupFabric("tcpx"); err == nil || !strings.Contains(err.Error(), `unknown fabric "tcpx": use one of tcpxo, gib`) {
		t.Errorf("LookupFabric(tcpx) error = %v", err)
	}
	// A verdict built without a fabric is the default's; one naming an
	// unknown fabric cannot be rendered.
	if f, err := (Verdict{}).JudgedFabric(); err != nil || f.Name != DefaultFabric {
		t.Errorf("zero verdict's fabric = %+v, %v", f, err)
	}
	if _, err := (Verdict{Fabric: "x"}).JudgedFabric(); err == nil {
		t.Error("a verdict of an unknown fabric has a fabric")
	}
	// Evaluate is EvaluateFabric for the default fabric.
	l := gibLog(t, "a3ultra-2node-gib.log", nil)
	if a, b := Evaluate(l, mustFloor(t, "300"), "v1"), EvaluateFabric(l, mustFloor(t, "300"), "v1", f); !reflect.DeepEqual(a, b) {
		t.Errorf("Evaluate and EvaluateFabric(tcpxo) differ:\n%+v\n%+v", a, b)
	}
}

// A gIB run is judged by all_gather_perf (Google's test and its published
// busbw) or all_reduce_perf; TCPXO's by all_reduce_perf only, as before.
func TestGIBCollectives(t *testing.T) {
	ag := gibLog(t, "a4-2node-all-gather.log", nil)
	if ag.Collective != AllGather {
		t.Fatalf("collective %q from %s", ag.Collective, ag.CollectiveFrom)
	}
	if err := ag.CheckFabricCollective(gib(t)); err != nil {
		t.Errorf("gib refuses an all_gather log: %v", err)
	}
	if err := gibLog(t, "a3ultra-2node-gib.log", nil).CheckFabricCollective(gib(t)); err != nil {
		t.Errorf("gib refuses an all_reduce log: %v", err)
	}
	tcpxo, err := LookupFabric("tcpxo")
	if err != nil {
		t.Fatal(err)
	}
	if err := ag.CheckFabricCollective(tcpxo); !errors.Is(err, ErrOtherCollective) || !strings.Contains(err.Error(), "not all_reduce_perf") {
		t.Errorf("tcpxo judges an all_gather log: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(string) string
		want string
	}{
		{"another collective", func(s string) string { return strings.ReplaceAll(s, "all_gather_perf", "alltoall_perf") },
			"it is alltoall_perf (identified from the '# Collective test starting' line), not all_gather_perf or all_reduce_perf"},
		{"named all_gather, a reduction's table", func(s string) string { return strings.ReplaceAll(s, "    none      -1", "     sum      -1") },
			"its table is not all_gather's: its rows carry the reduction \"sum\""},
		{"named all_gather, a rooted table", func(s string) string { return strings.ReplaceAll(s, "    none      -1", "    none       0") },
			"its table is not all_gather's: its rows have root 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := gibLog(t, "a4-2node-all-gather.log", tc.edit).CheckFabricCollective(gib(t))
			if !errors.Is(err, ErrOtherCollective) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one naming %q", err, tc.want)
			}
		})
	}
	// Judged like any run: the busbw at the largest size against the floor.
	v := EvaluateFabric(ag, mustFloor(t, ">= 300"), "", gib(t))
	if !v.Pass || v.Measured != 342.69 || v.Size != 8589934592 {
		t.Errorf("pass %v, measured %v at %d, problems %v", v.Pass, v.Measured, v.Size, v.Problems)
	}
}

// gIB's declared floors are 80 % of Google's published 2-node all_gather
// busbw at 8 GB, per machine type; nothing is declared for all_reduce or
// for TCPXO (whose floor is nccl-report's --floor default).
func TestGIBDeclaredFloors(t *testing.T) {
	for mt, want := range map[string][2]float64{"a3-ultragpu-8g": {264, 330}, "a4-highgpu-8g": {275.2, 344}} {
		f, from, ok := gib(t).DeclaredFloor(mt, AllGather)
		if !ok || f.GBps != want[0] || f.Op != ">=" || from.GBps != want[1] || from.Nodes != 2 || from.Size != "8 GB" || !strings.Contains(from.Source, "Run NCCL on custom GKE clusters that use A4 or A3 Ultra") {
			t.Errorf("%s: floor %+v from %+v (ok %v), want >= %g from the published %g", mt, f, from, ok, want[0], want[1])
		}
		if _, _, ok := gib(t).DeclaredFloor(mt, AllReduce); ok {
			t.Errorf("%s: a floor is declared for all_reduce, which Google publishes no figure for", mt)
		}
	}
	if got := gib(t).PublishedMachineTypes(); !reflect.DeepEqual(got, []string{"a3-ultragpu-8g", "a4-highgpu-8g"}) {
		t.Errorf("published machine types %v", got)
	}
	tcpxo, _ := LookupFabric("tcpxo")
	if len(tcpxo.Published) != 0 || !reflect.DeepEqual(tcpxo.Collectives, []string{AllReduce}) {
		t.Errorf("tcpxo: published %v, collectives %v", tcpxo.Published, tcpxo.Collectives)
	}
}
