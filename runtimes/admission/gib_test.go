package admission

import (
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
)

func gibSet(t *testing.T) *Set {
	t.Helper()
	in, err := shipped.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtimes.RDMARuntime(in, runtimes.RDMAOptions{Interfaces: runtimes.ExampleRDMAInterfaces(), MachineType: "a4-highgpu-8g"})
	if err != nil {
		t.Fatal(err)
	}
	set, err := Generate(rt, in.GIB, Options{Fabric: fabric.GIB})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// The gIB contract, evaluated by the API server's own CEL plugin, holds
// TrainJobs of every gIB runtime to gIB's rule set: NCCL_NET off gIB or an
// enforced checker value overridden is denied, naming the variable; a
// replaced command with a logging variable passes; TrainJobs of other
// runtimes are not its. TCPXO's advisory no longer tells a multi-node gIB
// TrainJob to use the TCPXO runtime.
func TestGIBPolicies(t *testing.T) {
	set := gibSet(t)
	if set.Policies[0].Name != "gib-fabric-contract" || set.Policies[1].Name != "gib-fabric-advisory" {
		t.Fatalf("policies %s, %s", set.Policies[0].Name, set.Policies[1].Name)
	}
	contract, advisory := compile(t, set.Policies[0]), compile(t, set.Policies[1])
	tcpxoAdvisory := compile(t, shippedSet(t, Options{}).Policies[1])
	gibJob := func(rt, trainer string) string {
		return job + "  runtimeRef: {name: " + rt + "}\n  trainer: " + trainer + "\n"
	}
	a3u, a4 := fabric.GIB.RuntimeFor("a3-ultragpu-8g"), fabric.GIB.RuntimeFor("a4-highgpu-8g")
	for name, tc := range map[string]struct {
		doc    string
		denied []string
	}{
		"command replaced":       {gibJob(a4, `{command: [torchrun, train.py], env: [{name: NCCL_DEBUG, value: INFO}]}`), nil},
		"socket transport":       {gibJob(a4, `{env: [{name: NCCL_NET, value: Socket}]}`), []string{"spec.trainer.env NCCL_NET", `"Socket"`}},
		"IB transport, A3 Ultra": {gibJob(a3u, `{env: [{name: NCCL_NET, value: IB}]}`), []string{"spec.trainer.env NCCL_NET"}},
		"enforced overridden":    {gibJob(a4, `{env: [{name: NCCL_IB_TC, value: "41"}]}`), []string{"spec.trainer.env NCCL_IB_TC"}},
		"GPUs dropped":           {gibJob(a4, `{resourcesPerNode: {limits: {nvidia.com/gpu: "4"}, requests: {nvidia.com/gpu: "4"}}}`), []string{"gIB pairs one RDMA NIC with each"}},
		"TCPXO TrainJob":         {gibJob("torch-distributed-tcpxo", `{env: [{name: NCCL_NET, value: Socket}]}`), nil},
	} {
		t.Run(name, func(t *testing.T) {
			got := strings.Join(decideYAML(t, contract, tc.doc), "\n")
			if (got == "") != (len(tc.denied) == 0) {
				t.Fatalf("contract: %q, want %q", got, tc.denied)
			}
			for _, w := range tc.denied {
				if !strings.Contains(got, w) {
					t.Errorf("contract: %q lacks %q", got, w)
				}
			}
			if strings.Contains(got, "FasTrak") || strings.Contains(got, "tcpxo-daemon") {
				t.Errorf("a gIB verdict speaks of TCPXO: %q", got)
			}
		})
	}
	multi := gibJob(a4, `{numNodes: 4}`)
	if got := decideYAML(t, tcpxoAdvisory, multi); len(got) != 0 {
		t.Errorf("TCPXO's advisory on a 4-node gIB TrainJob: %q", got)
	}
	if got := decideYAML(t, advisory, multi); len(got) != 0 {
		t.Errorf("gIB's advisory on a clean 4-node TrainJob: %q", got)
	}
}
