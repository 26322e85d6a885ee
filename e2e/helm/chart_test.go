package helm

import (
	"encoding/json"
	"path"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/e2e/scenario"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/benchmark"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
)

// repoRoot is the parent module's checkout: this package is e2e/helm.
const repoRoot = "../.."

// loadChart is the TCPXO chart, which the scenarios of this file drive
// (gib_test.go drives gIB's).
func loadChart(t testing.TB) string {
	t.Helper()
	return ChartDir(repoRoot, fabric.TCPXO.Name)
}

// values reads a values document as `helm install -f` does.
func values(t testing.TB, doc string) map[string]any {
	t.Helper()
	v, err := common.ReadValues([]byte(doc))
	if err != nil {
		t.Fatalf("values %q: %v", doc, err)
	}
	return v
}

func mustMapping(t testing.TB, pairs string) interfaces.Mapping {
	t.Helper()
	m, err := interfaces.Parse(pairs)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// vpcs is a cluster's mapping, written by discover -o values.
const vpcs = "eth1=vpc1,eth2=vpc2,eth3=vpc3,eth4=vpc4,eth5=vpc5,eth6=vpc6,eth7=vpc7,eth8=vpc8"

// key names an object as kubectl does.
func key(m map[string]any) string {
	meta, _ := m["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	kind, _ := m["kind"].(string)
	return kind + " " + path.Join(ns, name)
}

// decoded are the objects of a manifest (a YAML stream), keyed.
func decoded(t testing.TB, manifest string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, doc := range scenario.Documents([]byte(manifest)) {
		u, err := scenario.Decode(doc)
		if err != nil {
			t.Fatalf("a rendered document does not decode: %v\n%s", err, doc)
		}
		if _, dup := out[key(u.Object)]; dup {
			t.Fatalf("%s rendered twice", key(u.Object))
		}
		out[key(u.Object)] = u.Object
	}
	return out
}

// typed are typed objects as the same maps: through their JSON encoding, as
// `render -o yaml` writes them.
func typed(t testing.TB, objs ...any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, o := range objs {
		data, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		out[key(m)] = m
	}
	return out
}

// rendered is what render runtime, render components and (with a
// namespace) render benchmark print for opts: the builders the commands
// call.
func rendered(t testing.TB, opts runtimes.Options, benchNamespace string) map[string]map[string]any {
	t.Helper()
	in, err := shipped.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtimes.TorchRuntime(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	objs := []any{rt}
	for _, ds := range runtimes.Components(in) {
		objs = append(objs, ds)
	}
	if benchNamespace != "" {
		bench, err := benchmark.ForCluster(in, opts, benchmark.Overrides{Namespace: benchNamespace})
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, bench)
	}
	return typed(t, objs...)
}

// TestTemplateEqualsRender: `helm template` of the committed chart, with
// the values a user gives, is object for object what the render commands
// print for the same inputs: with discover's values file alone, and with
// the mapping reordered, every other value set and the benchmark on.
func TestTemplateEqualsRender(t *testing.T) {
	ch, err := Load(loadChart(t))
	if err != nil {
		t.Fatal(err)
	}
	m := mustMapping(t, vpcs)
	const worker = "us-docker.pkg.dev/team/train/worker:v3@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tol := corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpEqual, Value: "present", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name, namespace, values string
		opts                    runtimes.Options
		bench                   bool
	}{
		{"discover's values file", "tcpxo-system", m.ValuesYAML(), runtimes.Options{Interfaces: m}, false},
		{"every value set", "ml-team", `tcpxoInterfaces:
  - {interfaceName: eth8, network: vpc8}
  - {interfaceName: eth3, network: vpc3}
  - {interfaceName: eth1, network: vpc1}
  - {interfaceName: eth2, network: vpc2}
  - {interfaceName: eth4, network: vpc4}
  - {interfaceName: eth6, network: vpc6}
  - {interfaceName: eth5, network: vpc5}
  - {interfaceName: eth7, network: vpc7}
nodeSelector: {pool: a3-mega, cloud.google.com/gke-nodepool: gpu}
tolerations:
  - {key: nvidia.com/gpu, operator: Equal, value: present, effect: NoSchedule}
workerImage: ` + worker + `
benchmark: {enabled: true}
`, runtimes.Options{Interfaces: m, NodeSelector: map[string]string{"pool": "a3-mega", "cloud.google.com/gke-nodepool": "gpu"},
			Tolerations: []corev1.Toleration{tol}, WorkerImage: worker}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			manifest, err := Template(ch, tc.namespace, values(t, tc.values))
			if err != nil {
				t.Fatalf("helm template: %v", err)
			}
			bench := ""
			if tc.bench {
				bench = tc.namespace
			}
			want := rendered(t, tc.opts, bench)
			if d := cmp.Diff(want, decoded(t, manifest)); d != "" {
				t.Errorf("helm template differs from render (-render +helm):\n%s", d)
			}
		})
	}
}

// TestLint: helm lint passes the chart with a values file (strict: no
// warning either), and fails it without a mapping, naming the value.
func TestLint(t *testing.T) {
	dir := loadChart(t)
	l := action.NewLint()
	l.Strict = true
	res := l.Run([]string{dir}, values(t, mustMapping(t, vpcs).ValuesYAML()))
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
	if len(res.Errors) == 0 || !strings.Contains(joinErrors(res.Errors), "/tcpxoInterfaces") {
		t.Errorf("helm lint without a mapping: %v, want a failure naming /tcpxoInterfaces", res.Errors)
	}
}

func joinErrors(errs []error) string {
	s := make([]string, len(errs))
	for i, e := range errs {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// entries writes a tcpxoInterfaces list, one entry per pair.
func entries(pairs ...string) string {
	var b strings.Builder
	b.WriteString("tcpxoInterfaces:\n")
	for _, p := range pairs {
		nic, net, _ := strings.Cut(p, "=")
		b.WriteString("  - {interfaceName: " + nic + ", network: " + net + "}\n")
	}
	return b.String()
}

// quoted is entries with every name in double quotes, as discover writes.
func quoted(pairs ...string) string {
	var b strings.Builder
	b.WriteString("tcpxoInterfaces:\n")
	for _, p := range pairs {
		nic, net, _ := strings.Cut(p, "=")
		b.WriteString("  - {interfaceName: \"" + nic + "\", network: \"" + net + "\"}\n")
	}
	return b.String()
}

// TestBadValuesFailTemplate: a bad values file fails `helm template` (and
// so `helm install`, which renders first) before anything is rendered, with
// a message naming the value; a bad mapping is one render runtime
// --values refuses too.
func TestBadValuesFailTemplate(t *testing.T) {
	ch, err := Load(loadChart(t))
	if err != nil {
		t.Fatal(err)
	}
	pairs := strings.Split(vpcs, ",")
	seven := pairs[:7:7] // appending to it leaves pairs alone
	long := strings.Repeat("n", interfaces.MaxNetworkNameLength+1)
	for _, tc := range []struct {
		name, values string
		mapping      bool // a bad mapping, which ParseYAML must refuse too
		want         []string
	}{
		{"seven networks", entries(seven...), true, []string{"at '/tcpxoInterfaces'", "minItems: got 7, want 8"}},
		{"nine networks", entries(append(pairs, "eth8=vpc9")...), true, []string{"at '/tcpxoInterfaces'", "maxItems: got 9, want 8"}},
		{"a NIC twice", entries(append(seven, "eth1=vpc9")...), true, []string{"at '/tcpxoInterfaces'", "max 1 items required to match contains schema, but matched 2 items at 0 7", "value must be 'eth8'"}},
		{"a network twice", entries(append(seven, "eth8=vpc1")...), true, []string{"tcpxoInterfaces: eth1 and eth8 are both mapped to network \"vpc1\"", interfaces.SharedNetworkRule, "map eth8 to the Network of its own VPC"}},
		{"eth9", entries(append(seven, "eth9=vpc9")...), true, []string{"at '/tcpxoInterfaces/7/interfaceName'", "value must be one of 'eth1'"}},
		{"eth0", entries(append(seven, "eth0=vpc9")...), true, []string{"at '/tcpxoInterfaces/7/interfaceName'"}},
		{"a 42-character name", entries(append([]string{"eth1=" + long}, pairs[1:]...)...), true, []string{"at '/tcpxoInterfaces/0/network'", "maxLength: got 42, want 41"}},
		{"an upper-case name", entries(append([]string{"eth1=VPC1"}, pairs[1:]...)...), true, []string{"at '/tcpxoInterfaces/0/network'", "'VPC1' does not match pattern"}},
		{"a misspelt entry key", strings.Replace(entries(pairs...), "network: vpc3", "netwrok: vpc3", 1), true, []string{"at '/tcpxoInterfaces/2'", "additional properties 'netwrok' not allowed"}},
		{"no mapping", "", true, []string{"at '/tcpxoInterfaces'", "minItems: got 0, want 8"}},
		{"a misspelt top-level key", entries(pairs...) + "nodeSelecter: {pool: a}\n", false, []string{"additional properties 'nodeSelecter' not allowed"}},
		{"a misspelt benchmark key", entries(pairs...) + "benchmark: {enable: true}\n", false, []string{"at '/benchmark'", "additional properties 'enable' not allowed"}},
		{"an unpinned worker image", entries(pairs...) + "workerImage: pytorch/pytorch:latest\n", false, []string{"at '/workerImage'", "'pytorch/pytorch:latest' does not match pattern"}},
		{"a toleration's unknown effect", entries(pairs...) + "tolerations: [{key: a, operator: Exists, effect: Sometimes}]\n", false, []string{"at '/tolerations/0/effect'"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			manifest, err := Template(ch, "tcpxo-system", values(t, tc.values))
			if err == nil {
				t.Fatalf("helm template accepted it:\n%.300s", manifest)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error lacks %q:\n%v", w, err)
				}
			}
			if tc.mapping {
				if _, perr := interfaces.ParseYAML([]byte(tc.values)); perr == nil {
					t.Errorf("render runtime --values accepts what the chart refuses")
				}
			}
		})
	}
}

// TestChartAcceptsWhatRenderAccepts: mappings render runtime --values
// accepts (any order, quoted names, the longest name GKE allows) pass the
// schema and render.
func TestChartAcceptsWhatRenderAccepts(t *testing.T) {
	ch, err := Load(loadChart(t))
	if err != nil {
		t.Fatal(err)
	}
	longest := "n" + strings.Repeat("0", interfaces.MaxNetworkNameLength-1)
	for name, doc := range map[string]string{
		"reversed":      entries("eth8=h", "eth7=g", "eth6=f", "eth5=e", "eth4=d", "eth3=c", "eth2=b", "eth1=a"),
		"quoted":        quoted(strings.Split(vpcs, ",")...),
		"longest names": entries("eth1="+longest[:40]+"1", "eth2="+longest[:40]+"2", "eth3=c", "eth4=d", "eth5=e", "eth6=f", "eth7=g", "eth8=h"),
	} {
		if _, err := interfaces.ParseYAML([]byte(doc)); err != nil {
			t.Fatalf("%s: render runtime --values refuses the fixture: %v", name, err)
		}
		if _, err := Template(ch, "tcpxo-system", values(t, doc)); err != nil {
			t.Errorf("%s: helm template refuses what render runtime accepts: %v", name, err)
		}
	}
}

// TestManifestIsYAML: the rendered manifest of a disabled benchmark holds
// no empty or comment-only document Helm would send.
func TestManifestIsYAML(t *testing.T) {
	ch, err := Load(loadChart(t))
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := Template(ch, "tcpxo-system", values(t, mustMapping(t, vpcs).ValuesYAML()))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(manifest, "nccl-tests-tcpxo.yaml") {
		t.Errorf("the disabled benchmark's template rendered something:\n%s", manifest)
	}
	var anyDoc any
	for _, doc := range scenario.Documents([]byte(manifest)) {
		if err := yaml.Unmarshal(doc, &anyDoc); err != nil || anyDoc == nil {
			t.Errorf("document %q: %v", doc, err)
		}
	}
}
