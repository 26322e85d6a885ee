package recipe

import (
	"path/filepath"
	"strings"
	"testing"
)

// gibBase is a valid gIB recipe whose line numbers the cases refer to.
var gibBase = []string{
	/* 1 */ "apiVersion: tcpxogen.dev/v1alpha1",
	/* 2 */ "kind: Recipe",
	/* 3 */ "fabric: gib",
	/* 4 */ "criteria: {service: gke, accelerator: h200, intent: training, platform: kubeflow}",
	/* 5 */ "configuration:",
	/* 6 */ "  gke:",
	/* 7 */ "    rdmaInterfaces:",
	/* 8 */ "      - {interfaceName: eth2, network: rdma-0}",
	/* 9 */ "      - {interfaceName: eth3, network: rdma-1}",
	/* 10 */ "      - {interfaceName: eth4, network: rdma-2}",
	/* 11 */ "      - {interfaceName: eth5, network: rdma-3}",
	/* 12 */ "      - {interfaceName: eth6, network: rdma-4}",
	/* 13 */ "      - {interfaceName: eth7, network: rdma-5}",
	/* 14 */ "      - {interfaceName: eth8, network: rdma-6}",
	/* 15 */ "      - {interfaceName: eth9, network: rdma-7}",
	/* 16 */ "constraints:",
	/* 17 */ "  - name: nccl-all-gather-bw",
	/* 18 */ `    value: ">= 264"`,
}

func gibEdit(lines map[int]string) []byte {
	out := append([]string(nil), gibBase...)
	for n, s := range lines {
		out[n-1] = s
	}
	return []byte(strings.Join(out, "\n") + "\n")
}

// A gIB recipe names its fabric, its machine by the accelerator, its RDMA
// mapping and the floor whose collective the benchmark runs.
func TestGIBRecipe(t *testing.T) {
	r, err := Parse("gib.yaml", gibEdit(nil))
	if err != nil {
		t.Fatal(err)
	}
	if r.FabricName() != "gib" || r.MachineType() != "a3-ultragpu-8g" || r.FloorConstraint() != ConstraintAllGatherBW {
		t.Errorf("fabric %q, machine type %q, floor %q", r.FabricName(), r.MachineType(), r.FloorConstraint())
	}
	if op, gbps := r.Floor(); op != ">=" || gbps != 264 {
		t.Errorf("floor %s %v", op, gbps)
	}
	if got := r.Interfaces().String(); !strings.HasPrefix(got, "eth2=rdma-0,") || !strings.HasSuffix(got, "eth9=rdma-7") {
		t.Errorf("mapping %s", got)
	}
	r, err = Parse("gib.yaml", gibEdit(map[int]string{17: "  - name: nccl-all-reduce-bw"}))
	if err != nil || r.FloorConstraint() != ConstraintAllReduceBW {
		t.Errorf("all_reduce floor: %v, %v", r, err)
	}
	// TCPXO recipes read as before: tcpxo, all_reduce, no machine type.
	r, err = Parse("tcpxo.yaml", edit(nil))
	if err != nil || r.FabricName() != "tcpxo" || r.MachineType() != "" || r.FloorConstraint() != ConstraintAllReduceBW {
		t.Errorf("tcpxo recipe: %+v, %v", r, err)
	}
}

func TestGIBSample(t *testing.T) {
	r, err := Load(filepath.Join("..", "..", "..", "testdata", "recipes", "gke-a4-gib.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if r.MachineType() != "a4-highgpu-8g" || !strings.HasPrefix(r.Interfaces().String(), "eth1=gvnic-1,eth2=rdma-0") || !r.Declares("nccl-rdma-installer") {
		t.Errorf("machine type %q, mapping %s", r.MachineType(), r.Interfaces())
	}
	if op, gbps := r.Floor(); op != ">=" || gbps != 275.2 {
		t.Errorf("floor %s %v", op, gbps)
	}
}

func TestGIBRecipeRejects(t *testing.T) {
	for _, tc := range []struct {
		name    string
		doc     []byte
		line    int
		path    string
		problem string
		fix     string
	}{
		{"unknown fabric", gibEdit(map[int]string{3: "fabric: infiniband"}), 3, "fabric", `"infiniband" is not a known value`, "gib"},
		{"an accelerator gIB does not serve", gibEdit(map[int]string{4: "criteria: {service: gke, accelerator: h100, intent: training, platform: kubeflow}"}), 4, "criteria.accelerator",
			"is h100, which fabric: gib does not serve", "h200 (a3-ultragpu-8g) or b200 (a4-highgpu-8g)"},
		{"A3 Mega's numbering", gibEdit(map[int]string{8: "      - {interfaceName: eth1, network: rdma-0}"}), 7, "configuration.gke.rdmaInterfaces",
			"eth2 is not mapped", "configuration.gke.rdmaInterfaces"},
		{"a network GKE rejects", gibEdit(map[int]string{11: "      - {interfaceName: eth5, network: RDMA_3}"}), 11, "configuration.gke.rdmaInterfaces[3].network",
			`"RDMA_3"`, "lower-case"},
		{"the TCPXO list", gibEdit(map[int]string{7: "    tcpxoInterfaces:"}), 7, "configuration.gke.tcpxoInterfaces",
			"is the TCPXO (tcpxo) mapping, but this recipe is for fabric gib", "move the mapping to configuration.gke.rdmaInterfaces"},
		{"no floor", gibEdit(map[int]string{16: "#", 17: "#", 18: "#"}), 0, "constraints",
			"has no bandwidth floor (nccl-all-gather-bw or nccl-all-reduce-bw)", "about 330 GB/s on A3 Ultra and 344 GB/s on A4"},
		{"two floors", []byte(string(gibEdit(nil)) + "  - name: nccl-all-reduce-bw\n    value: \">= 300\"\n"), 19, "constraints[1].name",
			"sets a second bandwidth floor", "keep one"},
		{"an all_gather floor for TCPXO", edit(map[int]string{24: "  - name: nccl-all-gather-bw"}), 24, "constraints[0].name",
			"nccl-all-gather-bw is for fabric: gib", "use nccl-all-reduce-bw"},
		{"an RDMA list for TCPXO", edit(map[int]string{14: "    rdmaInterfaces:"}), 14, "configuration.gke.rdmaInterfaces",
			"is the gIB (gib) mapping, but this recipe is for fabric tcpxo", "set fabric: gib"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("r.yaml", tc.doc)
			var found bool
			for _, p := range problems(t, err) {
				if p.Path == tc.path && (tc.line == 0 || p.Line == tc.line) && strings.Contains(p.Problem, tc.problem) && strings.Contains(p.Fix, tc.fix) {
					found = true
				}
			}
			if !found {
				t.Errorf("no problem at line %d %s with %q / fix %q:\n%v", tc.line, tc.path, tc.problem, tc.fix, err)
			}
		})
	}
}
