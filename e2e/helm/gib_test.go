package helm

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
)

// The gIB chart's scenarios: deploy/helm/gib, a runtime per machine type.

func gibChart(t testing.TB) string {
	t.Helper()
	return ChartDir(repoRoot, fabric.GIB.Name)
}

// rdmaNets is a cluster's gIB mapping of the eight RDMA NICs.
const rdmaNets = "eth2=rdma-0,eth3=rdma-1,eth4=rdma-2,eth5=rdma-3,eth6=rdma-4,eth7=rdma-5,eth8=rdma-6,eth9=rdma-7"

func rdmaMapping(t testing.TB, pairs string) interfaces.Mapping {
	t.Helper()
	m, err := interfaces.RDMA.Parse(pairs)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// renderedGIB is what `render runtime --fabric gib --machine-type T` prints
// for each machine type of mts, with opts' mapping and cluster fields, and
// what `render components --fabric gib` prints.
func renderedGIB(t testing.TB, opts runtimes.RDMAOptions, mts ...string) map[string]map[string]any {
	t.Helper()
	in, err := shipped.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	var objs []any
	for _, mt := range mts {
		o := opts
		o.MachineType = mt
		rt, err := runtimes.RDMARuntime(in, o)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, rt)
	}
	for _, ds := range runtimes.RDMAComponents(in) {
		objs = append(objs, ds)
	}
	return typed(t, objs...)
}

// TestGIBTemplateEqualsRender: `helm template` of the committed gIB chart
// is, object for object, what render runtime --fabric gib --machine-type T
// prints for each machine type the values list, with render components
// --fabric gib: with the eight RDMA networks alone (both machine types, no
// image, as render prints them), with eth1 too, reordered, one machine
// type and every other value set.
func TestGIBTemplateEqualsRender(t *testing.T) {
	ch, err := Load(gibChart(t))
	if err != nil {
		t.Fatal(err)
	}
	m := rdmaMapping(t, rdmaNets)
	m1 := rdmaMapping(t, rdmaNets+",eth1=gvnic-1")
	const worker = "us-docker.pkg.dev/team/train/worker:cuda13@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tol := corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpEqual, Value: "present", Effect: corev1.TaintEffectNoSchedule}
	all := fabric.GIB.MachineTypeNames()
	for _, tc := range []struct {
		name, values string
		opts         runtimes.RDMAOptions
		mts          []string
	}{
		{"eight RDMA networks, defaults", m.ValuesYAML(), runtimes.RDMAOptions{Interfaces: m}, all},
		{"with eth1, defaults", m1.ValuesYAML(), runtimes.RDMAOptions{Interfaces: m1}, all},
		{"with eth1, reordered, A4 only, every value set", `rdmaInterfaces:
  - {interfaceName: eth9, network: rdma-7}
  - {interfaceName: eth1, network: gvnic-1}
  - {interfaceName: eth3, network: rdma-1}
  - {interfaceName: eth2, network: rdma-0}
  - {interfaceName: eth5, network: rdma-3}
  - {interfaceName: eth4, network: rdma-2}
  - {interfaceName: eth6, network: rdma-4}
  - {interfaceName: eth8, network: rdma-6}
  - {interfaceName: eth7, network: rdma-5}
machineTypes: [a4-highgpu-8g]
nodeSelector: {cloud.google.com/gke-nodepool: a4}
tolerations:
  - {key: nvidia.com/gpu, operator: Equal, value: present, effect: NoSchedule}
workerImage: ` + worker + `
`, runtimes.RDMAOptions{Interfaces: m1, NodeSelector: map[string]string{"cloud.google.com/gke-nodepool": "a4"}, Tolerations: []corev1.Toleration{tol}, WorkerImage: worker}, []string{"a4-highgpu-8g"}},
		{"A3 Ultra only", m.ValuesYAML() + "machineTypes: [a3-ultragpu-8g]\n", runtimes.RDMAOptions{Interfaces: m}, []string{"a3-ultragpu-8g"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			manifest, err := Template(ch, "gib-system", values(t, tc.values))
			if err != nil {
				t.Fatalf("helm template: %v", err)
			}
			if d := cmp.Diff(renderedGIB(t, tc.opts, tc.mts...), decoded(t, manifest)); d != "" {
				t.Errorf("helm template differs from render (-render +helm):\n%s", d)
			}
		})
	}
}

// TestGIBLint: helm lint --strict passes the gIB chart with a values file,
// and fails it without a mapping, naming the value.
func TestGIBLint(t *testing.T) {
	dir := gibChart(t)
	l := action.NewLint()
	l.Strict = true
	res := l.Run([]string{dir}, values(t, rdmaMapping(t, rdmaNets+",eth1=gvnic-1").ValuesYAML()))
	if len(res.Errors) > 0 {
		t.Errorf("helm lint --strict: %v", res.Errors)
	}
	for _, msg := range res.Messages {
		if msg.Severity >= support.WarningSev {
			t.Errorf("helm lint --strict: %s", msg)
		}
	}
	if res.TotalChartsLinted != 1 {
		t.Errorf("helm lint linted %d charts, want 1", res.TotalChartsLinted)
	}
	res = action.NewLint().Run([]string{dir}, nil)
	if len(res.Errors) == 0 || !strings.Contains(joinErrors(res.Errors), "rdmaInterfaces") {
		t.Errorf("helm lint without a mapping: %v, want a failure naming rdmaInterfaces", res.Errors)
	}
}

// rdmaEntries writes an rdmaInterfaces list, one entry per pair.
func rdmaEntries(pairs ...string) string {
	return strings.Replace(entries(pairs...), "tcpxoInterfaces:", "rdmaInterfaces:", 1)
}

// TestGIBBadValuesFailTemplate: a bad gIB values file fails `helm
// template` (and so `helm install`) before anything is rendered, naming
// the value: the schema for the mapping's shape, the template for two NICs
// on one network; render runtime --fabric gib --values refuses every bad
// mapping too.
func TestGIBBadValuesFailTemplate(t *testing.T) {
	ch, err := Load(gibChart(t))
	if err != nil {
		t.Fatal(err)
	}
	pairs := strings.Split(rdmaNets, ",")
	seven := pairs[:7:7] // appending to it leaves pairs alone
	long := strings.Repeat("n", interfaces.MaxNetworkNameLength+1)
	with := func(more ...string) []string { return append(append([]string(nil), pairs...), more...) }
	for _, tc := range []struct {
		name, values string
		mapping      bool // a bad mapping, which RDMA.ParseYAML must refuse too
		want         []string
	}{
		{"seven networks", rdmaEntries(seven...), true, []string{"at '/rdmaInterfaces'", "minItems: got 7, want 8"}},
		{"seven networks and eth1", rdmaEntries(append(seven, "eth1=gvnic-1")...), true, []string{"at '/rdmaInterfaces'", "min 1 items required to match contains schema, but none matched", "value must be 'eth9'"}},
		{"ten networks", rdmaEntries(with("eth1=gvnic-1", "eth9=rdma-8")...), true, []string{"at '/rdmaInterfaces'", "maxItems: got 10, want 9"}},
		{"an RDMA NIC twice", rdmaEntries(with("eth2=rdma-8")...), true, []string{"at '/rdmaInterfaces'", "max 1 items required to match contains schema, but matched 2 items at 0 8"}},
		{"eth1 twice", rdmaEntries(append(pairs[1:], "eth1=gvnic-1", "eth1=gvnic-2")...), true, []string{"at '/rdmaInterfaces'", "max 1 items required to match contains schema, but matched 2 items at 7 8"}},
		{"eth0", rdmaEntries(with("eth0=default")...), true, []string{"at '/rdmaInterfaces/8/interfaceName'", "value must be one of 'eth1'"}},
		{"eth10", rdmaEntries(with("eth10=rdma-8")...), true, []string{"at '/rdmaInterfaces/8/interfaceName'", "value must be one of 'eth1'"}},
		{"TCPXO's eth1..eth8", rdmaEntries(strings.Split(vpcs, ",")...), true, []string{"at '/rdmaInterfaces'", "value must be 'eth9'"}},
		{"a 42-character name", rdmaEntries(append([]string{"eth2=" + long}, pairs[1:]...)...), true, []string{"at '/rdmaInterfaces/0/network'", "maxLength: got 42, want 41"}},
		{"an upper-case name", rdmaEntries(append([]string{"eth2=RDMA-0"}, pairs[1:]...)...), true, []string{"at '/rdmaInterfaces/0/network'", "'RDMA-0' does not match pattern"}},
		{"two RDMA NICs on one network", rdmaEntries(append(seven, "eth9=rdma-0")...), true, []string{"rdmaInterfaces: eth2 and eth9 are both mapped to network \"rdma-0\"", "each RDMA NIC is on its own subnet", "map eth9 to the Network of its own subnet"}},
		{"eth1 on an RDMA network", rdmaEntries(with("eth1=rdma-3")...), true, []string{"rdmaInterfaces: eth5 and eth1 are both mapped to network \"rdma-3\"", "eth1 is for the gVNIC network, a network of its own", "gvnic-1 in Google's documentation"}},
		{"eth1 first on an RDMA network", rdmaEntries(append([]string{"eth1=rdma-3"}, pairs...)...), true, []string{"rdmaInterfaces: eth1 and eth5 are both mapped to network \"rdma-3\"", "eth1 is for the gVNIC network"}},
		{"no mapping", "", true, []string{"at '/rdmaInterfaces'", "minItems: got 0, want 8"}},
		{"TCPXO's values file", mustMapping(t, vpcs).ValuesYAML(), true, []string{"additional properties 'tcpxoInterfaces' not allowed", "at '/rdmaInterfaces'", "minItems: got 0, want 8"}},
		{"A3 Mega", rdmaEntries(pairs...) + "machineTypes: [a3-megagpu-8g]\n", false, []string{"at '/machineTypes/0'", "value must be one of 'a3-ultragpu-8g', 'a4-highgpu-8g'"}},
		{"a machine type twice", rdmaEntries(pairs...) + "machineTypes: [a4-highgpu-8g, a4-highgpu-8g]\n", false, []string{"at '/machineTypes'", "items at 0 and 1 are equal"}},
		{"no machine type", rdmaEntries(pairs...) + "machineTypes: []\n", false, []string{"at '/machineTypes'", "minItems: got 0, want 1"}},
		{"an unpinned worker image", rdmaEntries(pairs...) + "workerImage: nvcr.io/nvidia/pytorch:25.10-py3\n", false, []string{"at '/workerImage'", "does not match pattern"}},
		{"the benchmark", rdmaEntries(pairs...) + "benchmark: {enabled: true}\n", false, []string{"additional properties 'benchmark' not allowed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			manifest, err := Template(ch, "gib-system", values(t, tc.values))
			if err == nil {
				t.Fatalf("helm template accepted it:\n%.300s", manifest)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error lacks %q:\n%v", w, err)
				}
			}
			if tc.mapping {
				if _, perr := interfaces.RDMA.ParseYAML([]byte(tc.values)); perr == nil {
					t.Errorf("render runtime --fabric gib --values accepts what the chart refuses")
				}
			}
		})
	}
}

// TestGIBChartAcceptsWhatRenderAccepts: mappings render runtime --fabric
// gib --values accepts (any order, quoted names, the longest names GKE
// allows, eth1 anywhere) pass the schema and render.
func TestGIBChartAcceptsWhatRenderAccepts(t *testing.T) {
	ch, err := Load(gibChart(t))
	if err != nil {
		t.Fatal(err)
	}
	longest := "n" + strings.Repeat("0", interfaces.MaxNetworkNameLength-1)
	for name, doc := range map[string]string{
		"reversed, eth1 last": rdmaEntries("eth9=h", "eth8=g", "eth7=f", "eth6=e", "eth5=d", "eth4=c", "eth3=b", "eth2=a", "eth1=gvnic"),
		"quoted":              strings.Replace(quoted(strings.Split(rdmaNets, ",")...), "tcpxoInterfaces:", "rdmaInterfaces:", 1),
		"longest names":       rdmaEntries("eth2="+longest[:40]+"2", "eth3=c", "eth4=d", "eth5=e", "eth6=f", "eth7=g", "eth8=h", "eth9=i", "eth1="+longest[:40]+"1"),
	} {
		if _, err := interfaces.RDMA.ParseYAML([]byte(doc)); err != nil {
			t.Fatalf("%s: render runtime --fabric gib --values refuses the fixture: %v", name, err)
		}
		if _, err := Template(ch, "gib-system", values(t, doc)); err != nil {
			t.Errorf("%s: helm template refuses what render runtime accepts: %v", name, err)
		}
	}
}
