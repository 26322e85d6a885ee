package deploy

import (
	"bytes"
	"encoding/json"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
)

func inputs(t *testing.T) *runtimes.Inputs {
	t.Helper()
	in, err := shipped.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func mapping(t *testing.T, l interfaces.Layout, pairs string) []interfaces.Binding {
	t.Helper()
	m, err := l.Parse(pairs)
	if err != nil {
		t.Fatal(err)
	}
	return m.Bindings()
}

// bindings are pairs as they come, unvalidated.
func bindings(pairs string) []interfaces.Binding {
	var out []interfaces.Binding
	for _, p := range strings.Split(pairs, ",") {
		nic, net, _ := strings.Cut(p, "=")
		out = append(out, interfaces.Binding{Interface: nic, Network: net})
	}
	return out
}

// Mappings of another cluster than the example's, out of NIC order.
const (
	tcpxoPairs = "eth8=vpc-h,eth1=vpc-a,eth2=vpc-b,eth3=vpc-c,eth4=vpc-d,eth5=vpc-e,eth6=vpc-f,eth7=vpc-g"
	// gibPairs binds the gVNIC network on eth1 too.
	gibPairs = "eth9=rdma-h,eth2=rdma-a,eth3=rdma-b,eth4=rdma-c,eth5=rdma-d,eth6=rdma-e,eth7=rdma-f,eth8=rdma-g,eth1=gvnic-x"
)

const pinnedWorker = "us-docker.pkg.dev/team/train/worker:v3@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// cluster is a mapping of f's and every other value set away from its
// default.
func cluster(t *testing.T, f Fabric) Cluster {
	pairs := tcpxoPairs
	if f.Layout == interfaces.RDMA {
		pairs = gibPairs
	}
	return Cluster{
		Interfaces:   mapping(t, f.Layout, pairs),
		NodeSelector: map[string]string{"pool": "gpu", "cloud.google.com/gke-nodepool": "gpu"},
		Tolerations:  []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpEqual, Value: "present", Effect: corev1.TaintEffectNoSchedule}},
		WorkerImage:  pinnedWorker,
	}
}

// key names an object as kubectl does: kind, namespace and name.
func key(u *unstructured.Unstructured) string {
	return u.GetKind() + " " + path.Join(u.GetNamespace(), u.GetName())
}

// byKey decodes typed objects into unstructured ones keyed by key.
func byKey(t *testing.T, objs ...any) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		m, err := toMap(o)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		out[key(u)] = u
	}
	return out
}

// build runs kustomize build (kustomize's API, as the kustomize CLI and
// kubectl -k do) on the base in files, with an overlay when overlay is set,
// and returns the objects keyed by key.
func build(t *testing.T, files map[string][]byte, overlay string) map[string]*unstructured.Unstructured {
	t.Helper()
	fs := filesys.MakeFsInMemory()
	for p, data := range files {
		if err := fs.WriteFile(path.Join("/base", p), data); err != nil {
			t.Fatal(err)
		}
	}
	dir := "/base"
	if overlay != "" {
		dir = "/overlay"
		if err := fs.WriteFile("/overlay/kustomization.yaml", []byte("resources:\n  - ../base\n"+overlay)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out := map[string]*unstructured.Unstructured{}
	for _, r := range res.Resources() {
		// Through JSON, as the rendered objects are: numbers decode alike.
		data, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		out[key(u)] = u
	}
	return out
}

// TestKustomizeBuildEqualsRender: kustomize build of the base render
// kustomize writes for a cluster is, object for object, what render
// runtime and render components print for it.
func TestKustomizeBuildEqualsRender(t *testing.T) {
	in := inputs(t)
	for _, f := range entries {
		name := f.Name()
		for _, tc := range []struct {
			name string
			c    Cluster
		}{
			{"example mapping, defaults", Cluster{Interfaces: f.Example()}},
			{"every value set", cluster(t, f)},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				files, err := Kustomize(in, f, tc.c, false)
				if err != nil {
					t.Fatal(err)
				}
				want, err := f.Render(in, tc.c)
				if err != nil {
					t.Fatal(err)
				}
				got := build(t, files, "")
				if d := cmp.Diff(byKey(t, want.all()...), got); d != "" {
					t.Errorf("kustomize build differs from render runtime + render components (-render +kustomize):\n%s", d)
				}
			})
		}
	}
}

// TestKustomizeOverlayPatchPoint: the overlay patch the base's
// kustomization documents, with another cluster's mapping, builds what
// render runtime prints for that mapping; the committed base builds the
// example's.
func TestKustomizeOverlayPatchPoint(t *testing.T) {
	in := inputs(t)
	for _, f := range entries {
		base, err := Kustomize(in, f, Cluster{Interfaces: f.Example()}, true)
		if err != nil {
			t.Fatal(err)
		}
		mine := Cluster{Interfaces: cluster(t, f).Interfaces}
		want, err := f.Render(in, mine)
		if err != nil {
			t.Fatal(err)
		}
		var patches []Patch
		for _, rt := range want.Runtimes {
			p, value, err := InterfacesPatchPoint(rt.Object)
			if err != nil {
				t.Fatal(err)
			}
			// The documented patch, as the kustomization shows it.
			if !strings.Contains(string(base[Kustomization]), commented("patches:\n")) || !strings.Contains(string(base[Kustomization]), "name: "+rt.Name+"}") || !strings.Contains(string(base[Kustomization]), "path: "+p) {
				t.Fatalf("%s does not document the patch point %s of %s:\n%s", Kustomization, p, rt.Name, base[Kustomization])
			}
			patches = append(patches, Patch{Runtime: rt.Name, Path: p, Value: value})
		}
		got := build(t, base, OverlayPatch(patches...))
		if d := cmp.Diff(byKey(t, want.all()...), got); d != "" {
			t.Errorf("the documented overlay patch does not give render runtime's objects (-render +kustomize):\n%s", d)
		}
	}
}

// TestKustomizeRefusesWhatRenderRefuses: no mapping, a bad one or an
// unpinned worker image is refused, as render runtime refuses it; so are
// machine types a fabric does not serve, or given to a fabric with one
// runtime.
func TestKustomizeRefusesWhatRenderRefuses(t *testing.T) {
	in := inputs(t)
	tcpxo, _ := Lookup("tcpxo")
	gib, _ := Lookup("gib")
	good := cluster(t, tcpxo)
	dup := append([]interfaces.Binding(nil), good.Interfaces...)
	dup[1].Network = dup[0].Network
	gibGood := cluster(t, gib).Interfaces
	for name, tc := range map[string]struct {
		f    Fabric
		c    Cluster
		want string
	}{
		"no mapping":                {tcpxo, Cluster{}, "tcpxoInterfaces is empty"},
		"shared network":            {tcpxo, Cluster{Interfaces: dup}, "already uses"},
		"unpinned image":            {tcpxo, Cluster{Interfaces: good.Interfaces, WorkerImage: "pytorch/pytorch:latest"}, "digest"},
		"benchmark":                 {tcpxo, Cluster{Interfaces: good.Interfaces, BenchmarkNamespace: "ns"}, "no benchmark"},
		"tcpxo: a machine type":     {tcpxo, Cluster{Interfaces: good.Interfaces, MachineTypes: []string{"a3-megagpu-8g"}}, "machine types are for a fabric with a runtime per machine type"},
		"gib: no mapping":           {gib, Cluster{}, "rdmaInterfaces is empty"},
		"gib: a TCPXO mapping":      {gib, Cluster{Interfaces: good.Interfaces}, "the GPU NICs of A3 Mega (TCPXO)"},
		"gib: eth1 on an RDMA net":  {gib, Cluster{Interfaces: bindings(strings.Replace(gibPairs, "eth1=gvnic-x", "eth1=rdma-a", 1))}, "eth1 is for the gVNIC network"},
		"gib: A3 Mega":              {gib, Cluster{Interfaces: gibGood, MachineTypes: []string{"a3-megagpu-8g"}}, `machine type "a3-megagpu-8g" is not served by the gib fabric: use a3-ultragpu-8g or a4-highgpu-8g`},
		"gib: a machine type twice": {gib, Cluster{Interfaces: gibGood, MachineTypes: []string{"a4-highgpu-8g", "a4-highgpu-8g"}}, "machine type a4-highgpu-8g is given twice"},
		"gib: unpinned image":       {gib, Cluster{Interfaces: gibGood, WorkerImage: "nvcr.io/nvidia/pytorch:25.10-py3"}, "digest"},
		"gib: benchmark":            {gib, Cluster{Interfaces: gibGood, BenchmarkNamespace: "ns"}, "no benchmark"},
	} {
		files, err := Kustomize(in, tc.f, tc.c, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, tc.want)
		}
		if files != nil {
			t.Errorf("%s: files returned with the error", name)
		}
	}
}

// TestGIBBaseHoldsTheListedMachineTypes: the gIB base holds a runtime for
// each machine type asked for, in registry order whatever the order asked,
// each render runtime --fabric gib --machine-type T's object; every one by
// default.
func TestGIBBaseHoldsTheListedMachineTypes(t *testing.T) {
	in := inputs(t)
	f, _ := Lookup("gib")
	for _, tc := range []struct {
		asked, want []string
	}{
		{nil, []string{"a3-ultragpu-8g", "a4-highgpu-8g"}},
		{[]string{"a4-highgpu-8g"}, []string{"a4-highgpu-8g"}},
		{[]string{"a4-highgpu-8g", "a3-ultragpu-8g"}, []string{"a3-ultragpu-8g", "a4-highgpu-8g"}},
	} {
		c := cluster(t, f)
		c.MachineTypes = tc.asked
		files, err := Kustomize(in, f, c, false)
		if err != nil {
			t.Fatal(err)
		}
		m, err := interfaces.RDMA.FromBindings(c.Interfaces)
		if err != nil {
			t.Fatal(err)
		}
		var want []any
		var resources []string
		for _, mt := range tc.want {
			rt, err := runtimes.RDMARuntime(in, runtimes.RDMAOptions{Interfaces: m, MachineType: mt, NodeSelector: c.NodeSelector, Tolerations: c.Tolerations, WorkerImage: c.WorkerImage})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, rt)
			resources = append(resources, "  - "+fabric.GIB.RuntimeFor(mt)+".yaml")
		}
		for _, ds := range runtimes.RDMAComponents(in) {
			want = append(want, ds)
		}
		if d := cmp.Diff(byKey(t, want...), build(t, files, "")); d != "" {
			t.Errorf("--machine-type %v: kustomize build differs from render runtime --fabric gib + render components --fabric gib (-render +kustomize):\n%s", tc.asked, d)
		}
		if !strings.HasSuffix(string(files[Kustomization]), "resources:\n"+strings.Join(resources, "\n")+"\n  - components.yaml\n") {
			t.Errorf("--machine-type %v: %s lists other resources than %v:\n%s", tc.asked, Kustomization, resources, files[Kustomization])
		}
	}
}

// TestChartTemplatesEveryClusterValue: in the chart, every field a cluster
// decides is a template expression over .Values and nothing of the example
// mapping is left; every other line is the rendered object's.
func TestChartTemplatesEveryClusterValue(t *testing.T) {
	in := inputs(t)
	f, _ := Lookup("tcpxo")
	files, err := Chart(in, f, "v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	rt := string(files[RuntimeTemplate(f.Runtimes()[0])])
	for _, want := range []string{
		`networking.gke.io/interfaces: {{ include "tcpxogen-tcpxo.interfaces" . | toJson }}`,
		`image: {{ .Values.workerImage | toJson }}`,
		`nodeSelector:{{- include "tcpxogen-tcpxo.nodeSelector" . | nindent 18 }}`,
		`{{- with .Values.tolerations }}`,
	} {
		if !strings.Contains(rt, want) {
			t.Errorf("%s lacks %s", RuntimeTemplate(f.Runtimes()[0]), want)
		}
	}
	bench := string(files[f.BenchmarkTemplate()])
	if !strings.HasPrefix(bench, "{{- if .Values.benchmark.enabled }}\n") || !strings.Contains(bench, "namespace: {{ .Release.Namespace | toJson }}") {
		t.Errorf("%s is not the benchmark behind benchmark.enabled in the release's namespace:\n%.400s", f.BenchmarkTemplate(), bench)
	}
	holdsNothingOfTheExample(t, f, files)
	// The components are not templated at all: render components' output.
	comps, err := runtimes.Encode(runtimes.FormatYAML, nil, mustRender(t, in, f).Components...)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(files[componentsFile], comps) {
		t.Errorf("%s is not render components' output", componentsFile)
	}
}

// holdsNothingOfTheExample: no template holds a network of the example
// mapping the chart was rendered from, no file a placeholder or a Helm
// hook.
func holdsNothingOfTheExample(t *testing.T, f Fabric, files map[string][]byte) {
	t.Helper()
	for p, data := range files {
		if strings.HasPrefix(p, "templates/") {
			for _, b := range f.Example() {
				if bytes.Contains(data, []byte(b.Network)) {
					t.Errorf("%s holds the example network %s", p, b.Network)
				}
			}
		}
		if bytes.Contains(data, []byte("tcpxogen-helm-value-")) {
			t.Errorf("%s holds a placeholder", p)
		}
		if bytes.Contains(data, []byte("helm.sh/hook")) {
			t.Errorf("%s has a Helm hook: hook resources are not part of the release", p)
		}
	}
}

// TestGIBChartTemplatesEveryClusterValue: the gIB chart holds a runtime
// template per machine type, rendered when machineTypes lists it, with
// the mapping, node selector, tolerations and image templated, the last
// three absent when unset as render runtime omits them; the installer
// DaemonSet as render components --fabric gib prints it; no benchmark.
func TestGIBChartTemplatesEveryClusterValue(t *testing.T) {
	in := inputs(t)
	f, _ := Lookup("gib")
	files, err := Chart(in, f, "v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, mt := range fabric.GIB.MachineTypeNames() {
		name := RuntimeTemplate(fabric.GIB.RuntimeFor(mt))
		want = append(want, name)
		rt := string(files[name])
		if !strings.HasPrefix(rt, `{{- if has "`+mt+`" .Values.machineTypes }}`+"\n# Code generated") || !strings.HasSuffix(rt, "\n{{- end }}\n") {
			t.Errorf("%s is not behind machineTypes listing %s:\n%.200s", name, mt, rt)
		}
		for _, w := range []string{
			`networking.gke.io/interfaces: {{ include "tcpxogen-gib.interfaces" . | toJson }}`,
			"{{- with .Values.workerImage }}\n                  image: {{ . | toJson }}\n{{- end }}\n                  name: node\n",
			"{{- with .Values.nodeSelector }}\n                nodeSelector:{{- toYaml . | nindent 18 }}\n{{- end }}\n",
			"{{- with .Values.tolerations }}\n                tolerations:{{- toYaml . | nindent 18 }}\n{{- end }}\n",
			"- " + mt + "\n",
		} {
			if !strings.Contains(rt, w) {
				t.Errorf("%s lacks %q", name, w)
			}
		}
	}
	want = append(want, componentsFile, helpersFile, notesFile)
	for p := range files {
		if strings.HasPrefix(p, "templates/") && !slices.Contains(want, p) {
			t.Errorf("the gIB chart has template %s; want only %v", p, want)
		}
	}
	holdsNothingOfTheExample(t, f, files)
	comps, err := runtimes.Encode(runtimes.FormatYAML, nil, mustRender(t, in, f).Components...)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(files[componentsFile], comps) {
		t.Errorf("%s is not render components --fabric gib's output", componentsFile)
	}
}

func mustRender(t *testing.T, in *runtimes.Inputs, f Fabric) Objects {
	t.Helper()
	o, err := f.Render(in, Cluster{Interfaces: f.Example()})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestChartValuesAreTheSchemasKeys: values.yaml is one strict YAML
// document whose keys are exactly the schema's properties, with the worker
// image the runtime defaults to (none for gIB) and, for gIB, every machine
// type.
func TestChartValuesAreTheSchemasKeys(t *testing.T) {
	in := inputs(t)
	for _, f := range entries {
		files, err := Chart(in, f, "v1.2.3")
		if err != nil {
			t.Fatal(err)
		}
		var values map[string]any
		if err := yaml.UnmarshalStrict(files[ValuesFile], &values); err != nil {
			t.Fatal(err)
		}
		props := f.Schema(in)["properties"].(obj)
		if d := cmp.Diff(sortedKeys(props), sortedKeys(values)); d != "" {
			t.Errorf("%s: values.yaml's keys differ from the schema's properties (-schema +values):\n%s", f.Name(), d)
		}
		wantImage := in.BOM.Images.Worker.Reference
		if f.Name() == "gib" {
			wantImage = ""
			if d := cmp.Diff([]any{"a3-ultragpu-8g", "a4-highgpu-8g"}, values[valuesMachineTypes]); d != "" {
				t.Errorf("gib: machineTypes defaults to other than every machine type (-want +got):\n%s", d)
			}
		}
		if values[valuesWorkerImage] != wantImage {
			t.Errorf("%s: workerImage defaults to %v, want %q", f.Name(), values[valuesWorkerImage], wantImage)
		}
		if err := validate(t, f.Schema(in), values); err == nil {
			t.Errorf("%s: the schema accepts values.yaml without a mapping", f.Name())
		}
		values[f.ValuesKey()] = asJSON(t, f.Example())
		if err := validate(t, f.Schema(in), values); err != nil {
			t.Errorf("%s: the schema refuses values.yaml with the example mapping: %v", f.Name(), err)
		}
	}
}

func TestChartVersion(t *testing.T) {
	for tool, want := range map[string]string{
		"v1.2.3":                             "1.2.3",
		"v0.0.0-20261206190000-0123456789ab": "0.0.0-20261206190000-0123456789ab",
		"devel+4925c3712345":                 "0.0.0-devel+4925c3712345",
		"devel+4925c3712345-dirty":           "0.0.0-devel+4925c3712345-dirty",
		"unknown":                            "0.0.0-unknown",
		"v1.0.15":                            "1.0.15",
	} {
		got, err := ChartVersion(tool)
		if err != nil || got != want {
			t.Errorf("ChartVersion(%q) = %q, %v; want %q", tool, got, err, want)
		}
	}
	for _, bad := range []string{"", "main", "v1.2", "devel+has space"} {
		if got, err := ChartVersion(bad); err == nil {
			t.Errorf("ChartVersion(%q) = %q, want an error", bad, got)
		}
	}
}

// TestLookupIsTheRegistrys: the fabrics are the registry's; an unknown
// name is refused with the registry's message.
func TestLookupIsTheRegistrys(t *testing.T) {
	if !slices.Equal(Names(), fabric.Names()) {
		t.Errorf("Names() = %v, the registry's are %v", Names(), fabric.Names())
	}
	f, err := Lookup("tcpxo")
	if err != nil {
		t.Fatal(err)
	}
	if f.Registry.Name != fabric.TCPXO.Name || f.Layout != interfaces.TCPXO {
		t.Errorf("Lookup(tcpxo) = the %s entry with layout %s", f.Registry.Name, f.Layout)
	}
	_, err = Lookup("rdma")
	_, want := fabric.Lookup("rdma")
	if err == nil || want == nil || err.Error() != want.Error() {
		t.Errorf("Lookup(rdma) = %v, want the registry's %v", err, want)
	}
}

// TestSubstituteRefusesWhatItCannotTemplate: a placeholder that opens a
// list item where a block must go, or one in no key's value, is an error,
// never a chart with the placeholder left in.
func TestSubstituteRefusesWhatItCannotTemplate(t *testing.T) {
	f, _ := Lookup("tcpxo")
	for _, in := range []string{
		"spec:\n  - nodeSelector: " + tokNodeSelector + "\n",
		"spec:\n  - tolerations: " + tokTolerations + "\n",
		"args:\n- " + tokWorkerImage + "\n",
		"x: tcpxogen-helm-value-unknown\n",
	} {
		if out, err := f.substitute([]byte(in)); err == nil {
			t.Errorf("substitute(%q) = %q, want an error", in, out)
		}
	}
}
