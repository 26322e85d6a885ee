package recipe

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

// base is a valid recipe whose line numbers the rejection cases refer to.
var base = []string{
	/* 1 */ "apiVersion: tcpxogen.dev/v1alpha1",
	/* 2 */ "kind: Recipe",
	/* 3 */ "criteria:",
	/* 4 */ "  service: gke",
	/* 5 */ "  accelerator: h100",
	/* 6 */ "  intent: training",
	/* 7 */ "  platform: kubeflow",
	/* 8 */ "components:",
	/* 9 */ "  - name: kubeflow-trainer",
	/* 10 */ "    version: v2.2.0",
	/* 11 */ "  - name: nccl-tcpxo-installer",
	/* 12 */ "configuration:",
	/* 13 */ "  gke:",
	/* 14 */ "    tcpxoInterfaces:",
	/* 15 */ "      - {interfaceName: eth1, network: net-1}",
	/* 16 */ "      - {interfaceName: eth2, network: net-2}",
	/* 17 */ "      - {interfaceName: eth3, network: net-3}",
	/* 18 */ "      - {interfaceName: eth4, network: net-4}",
	/* 19 */ "      - {interfaceName: eth5, network: net-5}",
	/* 20 */ "      - {interfaceName: eth6, network: net-6}",
	/* 21 */ "      - {interfaceName: eth7, network: net-7}",
	/* 22 */ "      - {interfaceName: eth8, network: net-8}",
	/* 23 */ "constraints:",
	/* 24 */ "  - name: nccl-all-reduce-bw",
	/* 25 */ `    value: ">= 300"`,
}

// edit returns base with the given 1-based lines replaced; "#" comments a
// line out, which keeps the numbering of the rest.
func edit(lines map[int]string) []byte {
	out := append([]string(nil), base...)
	for n, s := range lines {
		out[n-1] = s
	}
	return []byte(strings.Join(out, "\n") + "\n")
}

func commentOut(from, to int) map[int]string {
	m := map[int]string{}
	for n := from; n <= to; n++ {
		m[n] = "#"
	}
	return m
}

func merge(ms ...map[int]string) map[int]string {
	out := map[int]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// problems unpacks Parse's error into its *Error values, failing the test if
// any is not one, lacks a fix, or comes out of line order.
func problems(t *testing.T, err error) []*Error {
	t.Helper()
	if err == nil {
		t.Fatal("accepted; want a rejection")
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var out []*Error
	last := 0
	for _, e := range errs {
		var re *Error
		if !errors.As(e, &re) {
			t.Fatalf("problem %v (%T) is not a *recipe.Error", e, e)
		}
		if re.Problem == "" || re.Fix == "" || re.File == "" {
			t.Errorf("incomplete problem %#v", re)
		}
		if re.Line < last && !strings.Contains(re.Problem, "more problem(s) not shown") {
			t.Errorf("problems out of line order: line %d after %d", re.Line, last)
		}
		last = re.Line
		out = append(out, re)
	}
	return out
}

func TestParseRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  []byte
		// want is the problem that must be among those reported: its line,
		// YAML path, and fragments of its problem and its fix.
		line           int
		path           string
		problem, fix   string
		wantInterfaces bool // the cause is an *interfaces.Error
	}{
		{
			name: "network name with upper case",
			doc:  edit(map[int]string{18: "      - {interfaceName: eth4, network: NET_4}"}),
			line: 18, path: "configuration.gke.tcpxoInterfaces[3].network",
			problem: `eth4 is mapped to "NET_4", which has upper-case letters`, fix: "GKE Network names are lower-case",
			wantInterfaces: true,
		},
		{
			name: "GPU NIC missing",
			doc:  edit(map[int]string{22: "#"}),
			line: 14, path: "configuration.gke.tcpxoInterfaces",
			problem: "eth8 is not mapped", fix: "add {interfaceName: eth8, network: <network>} to configuration.gke.tcpxoInterfaces",
			wantInterfaces: true,
		},
		{
			name: "GPU NIC mapped twice",
			doc:  edit(map[int]string{22: "      - {interfaceName: eth1, network: net-8}"}),
			line: 22, path: "configuration.gke.tcpxoInterfaces[7].interfaceName",
			problem: "eth1 is mapped twice (configuration.gke.tcpxoInterfaces[0] and configuration.gke.tcpxoInterfaces[7])", fix: "keep exactly one",
			wantInterfaces: true,
		},
		{
			name: "network shared by two NICs",
			doc:  edit(map[int]string{16: "      - {interfaceName: eth2, network: net-1}"}),
			line: 16, path: "configuration.gke.tcpxoInterfaces[1].network",
			problem: `eth2 is mapped to "net-1", which eth1 already uses`, fix: "its own Device-type GKE Network",
			wantInterfaces: true,
		},
		{
			name: "default interface in the mapping",
			doc:  edit(map[int]string{15: "      - {interfaceName: eth0, network: default}"}),
			line: 15, path: "configuration.gke.tcpxoInterfaces[0].interfaceName",
			problem: "eth0 is the pod's default interface", fix: "map only the GPU NICs",
			wantInterfaces: true,
		},
		{
			name: "binding without interface",
			doc:  edit(map[int]string{17: "      - {network: net-3}"}),
			line: 17, path: "configuration.gke.tcpxoInterfaces[2].interfaceName",
			problem: "configuration.gke.tcpxoInterfaces[2] has no interface name", fix: "eth<1-8>",
			wantInterfaces: true,
		},
		{
			name: "same bad interface twice is reported at each entry",
			doc: edit(map[int]string{
				17: "      - {interfaceName: eth9, network: net-3}",
				19: "      - {interfaceName: eth9, network: net-5}",
			}),
			line: 19, path: "configuration.gke.tcpxoInterfaces[4].interfaceName",
			problem: "eth9 is not a GPU NIC", fix: "eth1..eth8",
			wantInterfaces: true,
		},
		{
			name: "empty interface list",
			doc:  edit(merge(map[int]string{14: "    tcpxoInterfaces: []"}, commentOut(15, 22))),
			line: 14, path: "configuration.gke.tcpxoInterfaces",
			problem: "configuration.gke.tcpxoInterfaces is empty", fix: "list eight bindings",
			wantInterfaces: true,
		},
		{
			name: "misspelt binding field",
			doc:  edit(map[int]string{17: "      - {interfaceName: eth3, netwrok: net-3}"}),
			line: 17, path: "configuration.gke.tcpxoInterfaces[2].netwrok",
			problem: "is not a known field", fix: "did you mean network?",
		},
		{
			name: "unknown service",
			doc:  edit(map[int]string{4: "  service: gcp"}),
			line: 4, path: "criteria.service",
			problem: `"gcp" is not a known value`, fix: "gke, eks or aks",
		},
		{
			name: "accelerator in upper case",
			doc:  edit(map[int]string{5: "  accelerator: H100"}),
			line: 5, path: "criteria.accelerator",
			problem: `"H100" is not a known value`, fix: "did you mean h100?",
		},
		{
			name: "criterion missing",
			doc:  edit(map[int]string{6: "#"}),
			line: 3, path: "criteria.intent",
			problem: "is missing", fix: "training (distributed training) or inference",
		},
		{
			name: "criterion duplicated",
			doc:  edit(map[int]string{7: "  intent: inference"}),
			line: 7, path: "criteria.intent",
			problem: "is set twice (first at line 6)", fix: "delete one of the two",
		},
		{
			name: "criteria as a list",
			doc:  edit(merge(map[int]string{3: "criteria: [gke, h100]"}, commentOut(4, 7))),
			line: 3, path: "criteria",
			problem: "is a list, not a mapping", fix: "service, accelerator, intent or platform",
		},
		{
			name: "criterion is a boolean",
			doc:  edit(map[int]string{7: "  platform: true"}),
			line: 7, path: "criteria.platform",
			problem: "is true/false, not text", fix: `platform: "true"`,
		},
		{
			name: "unknown component",
			doc:  edit(map[int]string{11: "  - name: nccl-tcpx-installer"}),
			line: 11, path: "components[1].name",
			problem: `"nccl-tcpx-installer" is not a known value`, fix: "did you mean nccl-tcpxo-installer?",
		},
		{
			name: "component declared twice",
			doc:  edit(map[int]string{11: "  - name: kubeflow-trainer"}),
			line: 11, path: "components[1].name",
			problem: "declares kubeflow-trainer again (first as components[0], line 9)", fix: "declare each component once",
		},
		{
			name: "component version not semantic",
			doc:  edit(map[int]string{10: "    version: latest"}),
			line: 10, path: "components[0].version",
			problem: `"latest" is not a semantic version`, fix: "e.g. v2.2.0",
		},
		{
			name: "component version read as a number",
			doc:  edit(map[int]string{10: "    version: 2.2"}),
			line: 10, path: "components[0].version",
			problem: "is a number, not text", fix: `version: "2.2"`,
		},
		{
			name: "floor unparsable",
			doc:  edit(map[int]string{25: `    value: "about 300"`}),
			line: 25, path: "constraints[0].value",
			problem: `"about 300" is not a floor`, fix: `value: ">= 300"`,
		},
		{
			name: "floor is an upper bound",
			doc:  edit(map[int]string{25: `    value: "<= 300"`}),
			line: 25, path: "constraints[0].value",
			problem: "is not a lower bound", fix: `">= N"`,
		},
		{
			name: "floor with a unit",
			doc:  edit(map[int]string{25: `    value: ">= 300GB/s"`}),
			line: 25, path: "constraints[0].value",
			problem: "has a unit; the value is always in GB/s", fix: `">= N"`,
		},
		{
			name: "floor zero",
			doc:  edit(map[int]string{25: `    value: ">= 0.0"`}),
			line: 25, path: "constraints[0].value",
			problem: "is not a positive bandwidth", fix: `">= N"`,
		},
		{
			name: "floor with a unit, bare",
			doc:  edit(map[int]string{25: `    value: 300 GB/s`}),
			line: 25, path: "constraints[0].value",
			problem: "has a unit", fix: `">= N"`,
		},
		{
			name: "floor empty",
			doc:  edit(map[int]string{25: `    value: ""`}),
			line: 25, path: "constraints[0].value",
			problem: "is missing", fix: `">= N"`,
		},
		{
			name: "floor unquoted",
			doc:  edit(map[int]string{25: "    value: >= 300"}),
			line: 25, path: "",
			problem: "is not valid YAML", fix: `quote a value that starts with '>'`,
		},
		{
			name: "floor constraint missing",
			doc:  edit(merge(map[int]string{23: "constraints: []"}, commentOut(24, 25))),
			line: 23, path: "constraints",
			problem: "has no nccl-all-reduce-bw", fix: "name: nccl-all-reduce-bw",
		},
		{
			name: "constraint misspelt",
			doc:  edit(map[int]string{24: "  - name: nccl-allreduce-bw"}),
			line: 24, path: "constraints[0].name",
			problem: `"nccl-allreduce-bw" is not a known constraint`, fix: "did you mean nccl-all-reduce-bw?",
		},
		{
			name: "floor set twice",
			doc:  append(edit(nil), []byte("  - {name: nccl-all-reduce-bw, value: \"> 10\"}\n")...),
			line: 26, path: "constraints[1].name",
			problem: "sets nccl-all-reduce-bw again (first as constraints[0], line 24)", fix: "keep one",
		},
		{
			name: "unknown top-level field",
			doc:  edit(map[int]string{23: "constraint:"}),
			line: 23, path: "constraint",
			problem: "is not a known field", fix: "did you mean constraints?",
		},
		{
			name: "wrong apiVersion",
			doc:  edit(map[int]string{1: "apiVersion: v1"}),
			line: 1, path: "apiVersion",
			problem: `is "v1", not tcpxogen.dev/v1alpha1`, fix: "kind: Recipe",
		},
		{
			name: "wrong kind",
			doc:  edit(map[int]string{2: "kind: Deployment"}),
			line: 2, path: "kind",
			problem: `is "Deployment", not Recipe`, fix: "apiVersion: tcpxogen.dev/v1alpha1",
		},
		{
			name: "GKE section on another service",
			doc:  edit(map[int]string{4: "  service: eks"}),
			line: 13, path: "configuration.gke",
			problem: `is set, but criteria.service is "eks"`, fix: "remove configuration.gke",
		},
		{
			name: "GKE section missing",
			doc:  edit(commentOut(12, 22)),
			line: 1, path: "configuration.gke",
			problem: "is missing; criteria.service gke requires it", fix: "tcpxoInterfaces with eight bindings",
		},
		{
			name: "anchor",
			doc:  edit(map[int]string{4: "  service: &s gke"}),
			line: 4, path: "criteria.service",
			problem: "uses a YAML anchor or alias", fix: "write the value out in full",
		},
		{
			name: "second document",
			doc:  append(edit(nil), []byte("---\nkind: Recipe\n")...),
			line: 26, path: "",
			problem: "has a second YAML document here", fix: "remove the '---' separator",
		},
		{
			name: "empty file",
			doc:  nil,
			line: 0, path: "",
			problem: "is empty", fix: "apiVersion: tcpxogen.dev/v1alpha1",
		},
		{
			name: "not a mapping",
			doc:  []byte("- a\n- b\n"),
			line: 1, path: "",
			problem: "is a list, not a mapping", fix: "write a recipe",
		},
		{
			name: "oversized",
			doc:  []byte(strings.Repeat("#", MaxSize+1)),
			line: 0, path: "",
			problem: "is over the 1048576-byte limit", fix: "check the path",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse("recipe.yaml", tc.doc)
			if r != nil {
				t.Errorf("rejection returned a recipe: %+v", r)
			}
			var found *Error
			for _, p := range problems(t, err) {
				if p.Line == tc.line && p.Path == tc.path && strings.Contains(p.Problem, tc.problem) {
					found = p
					break
				}
			}
			if found == nil {
				t.Fatalf("no problem at line %d, path %q, containing %q; got:\n%v", tc.line, tc.path, tc.problem, err)
			}
			if !strings.Contains(found.Fix, tc.fix) {
				t.Errorf("fix %q does not contain %q", found.Fix, tc.fix)
			}
			prefix := "recipe.yaml"
			if tc.line > 0 {
				prefix += fmt.Sprintf(":%d", tc.line)
			}
			prefix += ": "
			if tc.path != "" {
				prefix += tc.path + " "
			}
			if msg := found.Error(); !strings.HasPrefix(msg, prefix) || !strings.HasSuffix(msg, ": "+found.Fix) {
				t.Errorf("message %q does not read %q<problem>: <fix>", msg, prefix)
			}
			// The recipe's error and the interfaces package's are one type:
			// the cause is the interfaces package's when it is one too.
			var ie *interfaces.Error
			if got := errors.As(found.Err, &ie); got != tc.wantInterfaces {
				t.Errorf("cause is an *interfaces.Error: %v, want %v", got, tc.wantInterfaces)
			}
		})
	}
}

// The report is complete: independent problems anywhere in the file are all
// reported in one pass, not just the first.
func TestParseReportsEveryProblem(t *testing.T) {
	doc := edit(map[int]string{
		4:  "  service: gcp",
		11: "  - name: nccl-tcpx-installer",
		18: "      - {interfaceName: eth4, network: NET_4}",
		25: `    value: "<= 300"`,
	})
	_, err := Parse("r.yaml", doc)
	var lines []int
	for _, p := range problems(t, err) {
		lines = append(lines, p.Line)
	}
	if want := []int{4, 11, 18, 25}; fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Errorf("problems at lines %v, want %v:\n%v", lines, want, err)
	}
}

func TestParseBoundsTheReport(t *testing.T) {
	var b strings.Builder
	b.WriteString(strings.Join(base, "\n") + "\n")
	for i := range 3 * yamlstrict.MaxProblems {
		fmt.Fprintf(&b, "extra%d: x\n", i)
	}
	_, err := Parse("r.yaml", []byte(b.String()))
	ps := problems(t, err)
	if len(ps) != yamlstrict.MaxProblems+1 || !strings.Contains(ps[yamlstrict.MaxProblems].Problem, "more problem(s) not shown") {
		t.Fatalf("%d problems reported, want %d and a count of the rest", len(ps), yamlstrict.MaxProblems+1)
	}
}

func TestSamples(t *testing.T) {
	gpuNICs := "eth1=gpu-nic-1,eth2=gpu-nic-2,eth3=gpu-nic-3,eth4=gpu-nic-4,eth5=gpu-nic-5,eth6=gpu-nic-6,eth7=gpu-nic-7,eth8=gpu-nic-8"
	for _, tc := range []struct {
		file       string
		trainer    bool
		op         string
		gbps       float64
		mapping    string
		components []string
	}{
		{"gke-h100.yaml", true, ">=", 300, gpuNICs, []string{"kubeflow-trainer", "nccl-tcpxo-installer"}},
		{"gke-h100-trainer-declared.yaml", true, ">", 320.5,
			"eth1=a3mega-vpc-1,eth2=a3mega-vpc-2,eth3=a3mega-vpc-3,eth4=a3mega-vpc-4,eth5=a3mega-vpc-5,eth6=a3mega-vpc-6,eth7=a3mega-vpc-7,eth8=a3mega-vpc-8",
			[]string{"kubeflow-trainer", "jobset", "nccl-tcpxo-installer", "nri-device-injector"}},
		{"gke-h100-trainer-undeclared.yaml", false, ">=", 300, gpuNICs, []string{"nccl-tcpxo-installer", "nri-device-injector"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			r, err := Load(filepath.Join("..", "..", "..", "testdata", "recipes", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if r.DeclaresTrainer() != tc.trainer {
				t.Errorf("DeclaresTrainer() = %v, want %v", r.DeclaresTrainer(), tc.trainer)
			}
			if op, gbps := r.Floor(); op != tc.op || gbps != tc.gbps {
				t.Errorf("Floor() = %s %v, want %s %v", op, gbps, tc.op, tc.gbps)
			}
			if got := r.Interfaces().String(); got != tc.mapping {
				t.Errorf("Interfaces() = %s, want %s", got, tc.mapping)
			}
			var names []string
			for _, c := range r.Components {
				names = append(names, c.Name)
			}
			if fmt.Sprint(names) != fmt.Sprint(tc.components) {
				t.Errorf("components %v, want %v", names, tc.components)
			}
			if r.Criteria != (Criteria{Service: "gke", Accelerator: "h100", Intent: "training", Platform: "kubeflow"}) {
				t.Errorf("criteria %+v", r.Criteria)
			}
		})
	}
}

// A recipe for a service without a configuration section has no mapping, and
// the reader does not demand one.
func TestParseNonGKE(t *testing.T) {
	r, err := Parse("eks.yaml", edit(merge(map[int]string{4: "  service: eks"}, commentOut(12, 22))))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Interfaces().IsZero() {
		t.Errorf("Interfaces() = %v on an EKS recipe, want the zero Mapping", r.Interfaces())
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := Load(path)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "--recipe") {
		t.Fatalf("Load(missing) = %v; want a not-exist error naming the path and the flag", err)
	}
}

func TestLoadOversized(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(path, []byte(strings.Repeat("#", MaxSize+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	// Refused by the input helper before parsing, with the real size.
	_, err := Load(path)
	if !errors.Is(err, inputfile.ErrTooLarge) || !strings.Contains(err.Error(), "--recipe "+path+" is 1048577 bytes") {
		t.Fatalf("Load(oversized) = %v", err)
	}
}

// A FIFO no longer blocks Load forever.
func TestLoadFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo.yaml")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); !errors.Is(err, inputfile.ErrNotRegular) {
		t.Fatalf("Load(FIFO) = %v", err)
	}
}

// The floor's numbers: hex floats, exponents and values past any link are
// refused, as nccl-report --floor refuses them (one parser for both).
func TestFloorNumbers(t *testing.T) {
	for value, want := range map[string]string{
		`"0x1p9"`:                               "is not a floor",
		`"1e308"`:                               "is not a floor",
		`">= 10001"`:                            "more than 10000 GB/s",
		`"> 1` + strings.Repeat("0", 400) + `"`: "more than 10000 GB/s",
	} {
		_, err := Parse("r.yaml", edit(map[int]string{25: "    value: " + value}))
		if ps := problems(t, err); !strings.Contains(ps[0].Problem, want) {
			t.Errorf("value %.40s: %v, want %q", value, err, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(edit(nil))
	f.Add(edit(map[int]string{25: "    value: 300"}))
	f.Add(edit(map[int]string{18: "      - {interfaceName: eth4, network: NET_4}"}))
	f.Add(edit(commentOut(12, 22)))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse("f.yaml", data)
		if err != nil {
			if r != nil {
				t.Fatal("rejection returned a recipe")
			}
			problems(t, err)
			return
		}
		if op, gbps := r.Floor(); (op != ">=" && op != ">") || !(gbps > 0) {
			t.Fatalf("accepted floor %q %v", op, gbps)
		}
		if r.Interfaces().IsZero() != (r.Criteria.Service != "gke") {
			t.Fatalf("service %s with mapping %v", r.Criteria.Service, r.Interfaces())
		}
	})
}
