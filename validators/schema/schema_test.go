package schema

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

var trainerValidator = sync.OnceValues(NewTrainer)

func mustTrainer(tb testing.TB) *Validator {
	tb.Helper()
	v, err := trainerValidator()
	if err != nil {
		tb.Fatalf("NewTrainer: %v", err)
	}
	return v
}

func readFixture(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// loadFixture decodes a one-object fixture the way the API server's decoder does: YAML to JSON,
// then JSON with integers kept as int64.
func loadFixture(tb testing.TB, name string) *unstructured.Unstructured {
	tb.Helper()
	j, err := yaml.YAMLToJSON(readFixture(tb, name))
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return u
}

// at walks a path of map keys (string) and list indices (int) and returns the value there.
func at(tb testing.TB, obj any, path ...any) any {
	tb.Helper()
	cur := obj
	for i, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				tb.Fatalf("at %v: %T is not a map", path[:i+1], cur)
			}
			cur = m[k]
		case int:
			l, ok := cur.([]any)
			if !ok || k >= len(l) {
				tb.Fatalf("at %v: %T is not a list with index %d", path[:i+1], cur, k)
			}
			cur = l[k]
		default:
			tb.Fatalf("bad path element %v", p)
		}
	}
	return cur
}

// set stores value at path; the parent must exist.
func set(tb testing.TB, obj map[string]any, value any, path ...any) {
	tb.Helper()
	parent := at(tb, obj, path[:len(path)-1]...)
	switch k := path[len(path)-1].(type) {
	case string:
		m, ok := parent.(map[string]any)
		if !ok {
			tb.Fatalf("set %v: parent %T is not a map", path, parent)
		}
		m[k] = value
	case int:
		l, ok := parent.([]any)
		if !ok || k >= len(l) {
			tb.Fatalf("set %v: parent %T is not a list with index %d", path, parent, k)
		}
		l[k] = value
	}
}

func del(tb testing.TB, obj map[string]any, path ...any) {
	tb.Helper()
	m, ok := at(tb, obj, path[:len(path)-1]...).(map[string]any)
	if !ok {
		tb.Fatalf("del %v: parent is not a map", path)
	}
	delete(m, path[len(path)-1].(string))
}

var (
	podSpec       = []any{"spec", "template", "spec", "replicatedJobs", 0, "template", "spec", "template", "spec"}
	nodeContainer = append(slices.Clone(podSpec), "containers", 0)
)

func container(rest ...any) []any { return append(slices.Clone(nodeContainer), rest...) }

// serverOutcome is what a Strict, dry-run create on a real API server must do with a case; the
// apiserver-tagged suite checks it.
type serverOutcome int

const (
	serverAccepts serverOutcome = iota
	serverRejects
	// serverSkip: the in-process test server serves only CRDs, so built-in and unknown kinds
	// cannot be sent to it.
	serverSkip
)

type validationCase struct {
	name    string
	fixture string
	mutate  func(tb testing.TB, obj map[string]any)
	// want lists the expected findings, compared by Kind and Path as a multiset; a non-empty
	// Detail must be a substring of the matching finding's Detail.
	want   []Finding
	server serverOutcome
}

// The paths and messages below are what the trainer v2.2.0 CRDs and the apiextensions code
// produce; they are not ours to choose, which is the point.
var validationCases = []validationCase{
	{name: "runtime/valid", fixture: "clustertrainingruntime.yaml"},
	{
		// v2.2.0 removed mlPolicy.torch.numProcPerNode: torch is `type: object` with no
		// properties, so anything inside it is pruned.
		name: "runtime/numProcPerNode removed in v2.2.0", fixture: "clustertrainingruntime-numprocpernode.yaml",
		want:   []Finding{{Kind: FindingPruned, Path: "spec.mlPolicy.torch.numProcPerNode", Detail: "drops it silently"}},
		server: serverRejects,
	},
	{
		// The trainer CRD spells out the whole JobSet and pod template (no
		// x-kubernetes-preserve-unknown-fields anywhere), so a typo deep in a container is
		// pruned like any other unknown field.
		name: "runtime/unknown container field", fixture: "clustertrainingruntime.yaml",
		mutate: func(tb testing.TB, o map[string]any) { set(tb, o, "x", container("bogus")...) },
		want:   []Finding{{Kind: FindingPruned, Path: "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].bogus"}},
		server: serverRejects,
	},
	{
		name: "runtime/unknown pod template metadata field", fixture: "clustertrainingruntime.yaml",
		mutate: func(tb testing.TB, o map[string]any) {
			set(tb, o, "x", "spec", "template", "spec", "replicatedJobs", 0, "template", "spec", "template", "metadata", "annotationz")
		},
		want:   []Finding{{Kind: FindingPruned, Path: "spec.template.spec.replicatedJobs[0].template.spec.template.metadata.annotationz"}},
		server: serverRejects,
	},
	{
		name: "runtime/unknown top-level field", fixture: "clustertrainingruntime.yaml",
		mutate: func(tb testing.TB, o map[string]any) { o["specs"] = map[string]any{"x": int64(1)} },
		want:   []Finding{{Kind: FindingPruned, Path: "specs"}},
		server: serverRejects,
	},
	{
		name: "runtime/unknown metadata field", fixture: "clustertrainingruntime.yaml",
		mutate: func(tb testing.TB, o map[string]any) { set(tb, o, map[string]any{"a": "b"}, "metadata", "label") },
		want:   []Finding{{Kind: FindingPruned, Path: "metadata.label"}},
		server: serverRejects,
	},
	{
		// A type error blocks CEL, and the server says so in a second error.
		name: "runtime/numNodes type error", fixture: "clustertrainingruntime.yaml",
		mutate: func(tb testing.TB, o map[string]any) { set(tb, o, "two", "spec", "mlPolicy", "numNodes") },
		want: []Finding{
			{Kind: FindingInvalid, Path: "spec.mlPolicy.numNodes", Detail: "must be of type integer"},
			{Kind: FindingInvalid, Path: "", Detail: "some validation rules were not checked"},
		},
		server: serverRejects,
	},
	{
		name: "runtime/mpiImplementation enum", fixture: "clustertrainingruntime.yaml",
		mutate: func(tb testing.TB, o map[string]any) {
			del(tb, o, "spec", "mlPolicy", "torch")
			set(tb, o, map[string]any{"mpiImplementation": "Intel"}, "spec", "mlPolicy", "mpi")
		},
		want: []Finding{
			{Kind: FindingInvalid, Path: "spec.mlPolicy.mpi.mpiImplementation", Detail: `Unsupported value: "Intel"`},
			{Kind: FindingInvalid, Path: "", Detail: "some validation rules were not checked"},
		},
		server: serverRejects,
	},
	{
		// x-kubernetes-validations on mlPolicy: only one framework policy.
		name: "runtime/CEL one policy", fixture: "clustertrainingruntime.yaml",
		mutate: func(tb testing.TB, o map[string]any) { set(tb, o, map[string]any{}, "spec", "mlPolicy", "mpi") },
		want:   []Finding{{Kind: FindingInvalid, Path: "spec.mlPolicy", Detail: "Only one of the policy can be configured"}},
		server: serverRejects,
	},
	{
		// Container env is x-kubernetes-list-type: map keyed by name.
		name: "runtime/duplicate env name", fixture: "clustertrainingruntime.yaml",
		mutate: func(tb testing.TB, o map[string]any) {
			env := at(tb, o, container("env")...).([]any)
			set(tb, o, append(env, map[string]any{"name": "NCCL_BUFFSIZE", "value": "1"}), container("env")...)
		},
		want:   []Finding{{Kind: FindingInvalid, Path: "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].env[2]", Detail: "Duplicate value"}},
		server: serverRejects,
	},
	{
		// The trainer webhook is not part of the test API server, which therefore accepts this.
		name: "runtime/webhook replicas", fixture: "clustertrainingruntime.yaml",
		mutate: func(tb testing.TB, o map[string]any) {
			set(tb, o, int64(2), "spec", "template", "spec", "replicatedJobs", 0, "replicas")
		},
		want: []Finding{{Kind: FindingWebhook, Path: "spec.template.spec.replicatedJobs[0].replicas", Detail: "always must be 1"}},
	},
	{
		name: "runtime/webhook node container", fixture: "clustertrainingruntime.yaml",
		mutate: func(tb testing.TB, o map[string]any) { set(tb, o, "trainer", container("name")...) },
		want: []Finding{{Kind: FindingWebhook, Path: "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers",
			Detail: "must contain the required container for the ancestor: trainer"}},
	},
	{
		name: "runtime/webhook deprecated warning", fixture: "clustertrainingruntime.yaml",
		mutate: func(tb testing.TB, o map[string]any) {
			set(tb, o, "deprecated", "metadata", "labels", "trainer.kubeflow.org/support")
		},
		want: []Finding{{Kind: FindingWebhook, Path: "", Detail: "warning: ClusterTrainingRuntime \"torch-fixture\" is deprecated"}},
	},
	{
		// The server clears it without a word, even under Strict.
		name: "runtime/namespace on cluster-scoped", fixture: "clustertrainingruntime.yaml",
		mutate: func(tb testing.TB, o map[string]any) { set(tb, o, "team-a", "metadata", "namespace") },
		want:   []Finding{{Kind: FindingPruned, Path: "metadata.namespace", Detail: "cluster-scoped"}},
	},
	{
		// Not even decodable: the server fails the request before validating anything.
		name: "runtime/metadata not an object", fixture: "clustertrainingruntime.yaml",
		mutate: func(tb testing.TB, o map[string]any) { o["metadata"] = "torch-fixture" },
		want:   []Finding{{Kind: FindingInvalid, Path: "metadata", Detail: "metadata does not decode"}},
		server: serverRejects,
	},
	{
		// YAML reads an unquoted y/yes/on as true: said in field and YAML
		// terms, not the decoder's Go struct fields.
		name: "runtime/metadata.name a boolean", fixture: "clustertrainingruntime.yaml",
		mutate: func(tb testing.TB, o map[string]any) { set(tb, o, true, "metadata", "name") },
		want:   []Finding{{Kind: FindingInvalid, Path: "metadata", Detail: "metadata.name must be a string, not true/false (quote the value)"}},
		server: serverRejects,
	},
	{
		name: "runtime/invalid name", fixture: "clustertrainingruntime.yaml",
		mutate: func(tb testing.TB, o map[string]any) { set(tb, o, "Torch_Fixture", "metadata", "name") },
		want:   []Finding{{Kind: FindingInvalid, Path: "metadata.name", Detail: "RFC 1123 subdomain"}},
		server: serverRejects,
	},
	{
		name: "TrainingRuntime/valid", fixture: "clustertrainingruntime.yaml",
		mutate: func(tb testing.TB, o map[string]any) {
			o["kind"] = "TrainingRuntime"
			set(tb, o, "team-a", "metadata", "namespace")
		},
	},
	{name: "trainjob/valid", fixture: "trainjob.yaml"},
	{
		name: "trainjob/no namespace", fixture: "trainjob.yaml",
		mutate: func(tb testing.TB, o map[string]any) { del(tb, o, "metadata", "namespace") },
	},
	{
		// metadata.name is a valid DNS subdomain, so only the CRD's root CEL rule catches it.
		name: "trainjob/CEL name", fixture: "trainjob.yaml",
		mutate: func(tb testing.TB, o map[string]any) { set(tb, o, "fixture.job", "metadata", "name") },
		want:   []Finding{{Kind: FindingInvalid, Path: "", Detail: "metadata.name must match RFC 1035 DNS label format"}},
		server: serverRejects,
	},
	{
		// v2.2.0 has runtimePatches, but ContainerPatch has no resources.
		name: "trainjob/runtimePatches resources", fixture: "trainjob-runtimepatches.yaml",
		want: []Finding{{Kind: FindingPruned,
			Path: "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources"}},
		server: serverRejects,
	},
	{
		name: "trainjob/runtimePatches env", fixture: "trainjob-runtimepatches.yaml",
		mutate: func(tb testing.TB, o map[string]any) {
			c := []any{"spec", "runtimePatches", 0, "trainingRuntimeSpec", "template", "spec", "replicatedJobs", 0, "template", "spec", "template", "spec", "containers", 0}
			del(tb, o, append(c, "resources")...)
			set(tb, o, "tcpxo-daemon", append(c, "name")...)
			set(tb, o, []any{map[string]any{"name": "X", "value": "1"}}, append(c, "env")...)
		},
	},
	{
		// TrainJob has a status subresource: status on create is dropped, not validated.
		name: "trainjob/status", fixture: "trainjob.yaml",
		mutate: func(tb testing.TB, o map[string]any) {
			o["status"] = map[string]any{"conditions": []any{}}
		},
		want: []Finding{{Kind: FindingPruned, Path: "status", Detail: "status subresource"}},
	},
	{name: "daemonset/valid", fixture: "daemonset.yaml", server: serverSkip},
	{
		name: "daemonset/unknown field", fixture: "daemonset.yaml",
		mutate: func(tb testing.TB, o map[string]any) {
			set(tb, o, "x", "spec", "template", "spec", "containers", 0, "imagePullPolicyy")
		},
		want:   []Finding{{Kind: FindingPruned, Path: "spec.template.spec.containers[0].imagePullPolicyy"}},
		server: serverSkip,
	},
	{
		name: "daemonset/type error", fixture: "daemonset.yaml",
		mutate: func(tb testing.TB, o map[string]any) { set(tb, o, "all", "spec", "minReadySeconds") },
		want:   []Finding{{Kind: FindingInvalid, Path: "", Detail: "does not decode as apps/v1 DaemonSet"}},
		server: serverSkip,
	},
	{
		name: "unknown kind", fixture: "trainjob.yaml",
		mutate: func(tb testing.TB, o map[string]any) {
			o["apiVersion"], o["kind"] = "jobset.x-k8s.io/v1alpha2", "JobSet"
		},
		want:   []Finding{{Kind: FindingUnknownKind, Path: "kind", Detail: "no schema for jobset.x-k8s.io/v1alpha2 JobSet"}},
		server: serverSkip,
	},
	{
		name: "unserved version", fixture: "trainjob.yaml",
		mutate: func(tb testing.TB, o map[string]any) { o["apiVersion"] = "trainer.kubeflow.org/v1" },
		want:   []Finding{{Kind: FindingUnknownKind, Path: "apiVersion", Detail: `does not serve version "v1"; use one of v1alpha1`}},
		server: serverSkip,
	},
	{
		name: "no kind", fixture: "trainjob.yaml",
		mutate: func(tb testing.TB, o map[string]any) { delete(o, "kind") },
		want:   []Finding{{Kind: FindingUnknownKind, Detail: "apiVersion and kind must both be set"}},
		server: serverSkip,
	},
}

// caseObject returns the case's object; each call gets a fresh copy.
func caseObject(tb testing.TB, c validationCase) *unstructured.Unstructured {
	tb.Helper()
	u := loadFixture(tb, c.fixture)
	if c.mutate != nil {
		c.mutate(tb, u.Object)
	}
	return u
}

func checkFindings(tb testing.TB, got, want []Finding) {
	tb.Helper()
	key := func(f Finding) string { return f.Kind + " " + f.Path }
	var gotKeys, wantKeys []string
	for _, f := range got {
		gotKeys = append(gotKeys, key(f))
	}
	for _, f := range want {
		wantKeys = append(wantKeys, key(f))
	}
	slices.Sort(gotKeys)
	slices.Sort(wantKeys)
	if !slices.Equal(gotKeys, wantKeys) {
		tb.Fatalf("findings (kind path):\n got  %q\n want %q\nall: %v", gotKeys, wantKeys, got)
	}
	for _, w := range want {
		if w.Detail == "" {
			continue
		}
		if !slices.ContainsFunc(got, func(f Finding) bool {
			return key(f) == key(w) && strings.Contains(f.Detail, w.Detail)
		}) {
			tb.Errorf("no %s finding whose detail contains %q; got %v", key(w), w.Detail, got)
		}
	}
}

func TestValidateCases(t *testing.T) {
	v := mustTrainer(t)
	for _, c := range validationCases {
		t.Run(c.name, func(t *testing.T) {
			obj := caseObject(t, c)
			r, err := v.ValidateObject(obj)
			if err != nil {
				t.Fatal(err)
			}
			checkFindings(t, r.Findings, c.want)
			if r.OK() != (len(c.want) == 0) {
				t.Errorf("OK() = %v with findings %v", r.OK(), r.Findings)
			}
			if (r.Err() == nil) != r.OK() {
				t.Errorf("Err() = %v, OK() = %v", r.Err(), r.OK())
			}
		})
	}
}

func TestReportIdentifiesObject(t *testing.T) {
	v := mustTrainer(t)
	r, err := v.ValidateObject(loadFixture(t, "trainjob.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := Report{APIVersion: "trainer.kubeflow.org/v1alpha1", Kind: "TrainJob", Namespace: "team-a", Name: "fixture-job"}
	if r.APIVersion != want.APIVersion || r.Kind != want.Kind || r.Namespace != want.Namespace || r.Name != want.Name {
		t.Errorf("report identity = %s %s %s/%s, want %s %s %s/%s", r.APIVersion, r.Kind, r.Namespace, r.Name,
			want.APIVersion, want.Kind, want.Namespace, want.Name)
	}
	// The TrainJob webhook is not run here, and a passing report must say so.
	if len(r.Unchecked) != 1 || !strings.Contains(r.Unchecked[0], "TrainJob admission webhook") {
		t.Errorf("Unchecked = %q, want the TrainJob webhook note", r.Unchecked)
	}
	rt, err := v.ValidateObject(loadFixture(t, "clustertrainingruntime.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rt.Unchecked) != 0 {
		t.Errorf("runtime Unchecked = %q, want none: every check runs for runtimes", rt.Unchecked)
	}
	ds, err := v.ValidateObject(loadFixture(t, "daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if ds.Defaulted != nil || len(ds.Unchecked) != 1 || !strings.Contains(ds.Unchecked[0], "built-in kind") {
		t.Errorf("DaemonSet report: Defaulted=%v Unchecked=%q; want no Defaulted and the built-in note", ds.Defaulted != nil, ds.Unchecked)
	}
}

func TestDefaulting(t *testing.T) {
	v := mustTrainer(t)
	validate := func(t *testing.T, obj *unstructured.Unstructured) map[string]any {
		t.Helper()
		r, err := v.ValidateObject(obj)
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK() {
			t.Fatal(r.Err())
		}
		if r.Defaulted == nil {
			t.Fatal("no Defaulted object")
		}
		return r.Defaulted.Object
	}
	type want struct {
		path  []any
		value any
	}
	check := func(t *testing.T, obj map[string]any, wants ...want) {
		t.Helper()
		for _, w := range wants {
			if got := at(t, obj, w.path...); !reflect.DeepEqual(got, w.value) {
				t.Errorf("%v = %#v, want %#v", w.path, got, w.value)
			}
		}
	}

	t.Run("TrainJob", func(t *testing.T) {
		d := validate(t, loadFixture(t, "trainjob.yaml"))
		check(t, d,
			want{[]any{"spec", "runtimeRef", "apiGroup"}, "trainer.kubeflow.org"},
			want{[]any{"spec", "runtimeRef", "kind"}, "ClusterTrainingRuntime"},
			want{[]any{"spec", "suspend"}, false},
			want{[]any{"spec", "managedBy"}, "trainer.kubeflow.org/trainjob-controller"},
			// Submitted values survive, with integers still int64.
			want{[]any{"spec", "trainer", "numNodes"}, int64(2)},
		)
	})
	t.Run("TrainJob without namespace stays without one", func(t *testing.T) {
		obj := loadFixture(t, "trainjob.yaml")
		obj.SetNamespace("")
		d := validate(t, obj)
		if _, ok := at(t, d, "metadata").(map[string]any)["namespace"]; ok {
			t.Errorf("Defaulted gained a namespace: %v", at(t, d, "metadata"))
		}
	})
	t.Run("ClusterTrainingRuntime", func(t *testing.T) {
		d := validate(t, loadFixture(t, "clustertrainingruntime.yaml"))
		check(t, d,
			want{[]any{"spec", "template", "spec", "replicatedJobs", 0, "replicas"}, int64(1)},
			want{[]any{"spec", "template", "spec", "replicatedJobs", 0, "groupName"}, "default"},
			want{[]any{"spec", "mlPolicy", "torch"}, map[string]any{}},
		)
	})
	t.Run("MPI policy", func(t *testing.T) {
		obj := loadFixture(t, "clustertrainingruntime.yaml")
		del(t, obj.Object, "spec", "mlPolicy", "torch")
		set(t, obj.Object, map[string]any{}, "spec", "mlPolicy", "mpi")
		d := validate(t, obj)
		check(t, d, want{[]any{"spec", "mlPolicy", "mpi"}, map[string]any{
			"numProcPerNode":    int64(1),
			"mpiImplementation": "OpenMPI",
			"sshAuthMountPath":  "/root/.ssh",
			"runLauncherAsNode": false,
		}})
	})
	t.Run("pruned field is gone", func(t *testing.T) {
		r, err := v.ValidateObject(loadFixture(t, "clustertrainingruntime-numprocpernode.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if got := at(t, r.Defaulted.Object, "spec", "mlPolicy", "torch"); !reflect.DeepEqual(got, map[string]any{}) {
			t.Errorf("Defaulted torch = %v, want {} (what the server stores)", got)
		}
	})
}

func TestValidateObjectLeavesInputAlone(t *testing.T) {
	v := mustTrainer(t)
	obj := loadFixture(t, "clustertrainingruntime-numprocpernode.yaml")
	before := obj.DeepCopy()
	if _, err := v.ValidateObject(obj); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(obj.Object, before.Object) {
		t.Error("ValidateObject modified its input")
	}
	if _, err := v.ValidateObject(nil); err == nil {
		t.Error("ValidateObject(nil) returned no error")
	}
}

// Objects built in Go rather than decoded from JSON carry int and float64 numbers; they must be
// judged as the JSON the server would receive, not panic or fail integer rules.
func TestValidateObjectNormalizesGoNumbers(t *testing.T) {
	v := mustTrainer(t)
	obj := loadFixture(t, "clustertrainingruntime.yaml")
	set(t, obj.Object, 2, "spec", "mlPolicy", "numNodes")
	set(t, obj.Object, float64(1), "spec", "template", "spec", "replicatedJobs", 0, "replicas")
	r, err := v.ValidateObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		t.Fatal(r.Err())
	}
	if got := at(t, r.Defaulted.Object, "spec", "mlPolicy", "numNodes"); got != int64(2) {
		t.Errorf("numNodes = %#v, want int64(2)", got)
	}
	set(t, obj.Object, make(chan int), "spec", "mlPolicy", "numNodes")
	if _, err := v.ValidateObject(obj); err == nil {
		t.Error("no error for an object that cannot be serialized")
	}
}

func TestValidateMultiDocument(t *testing.T) {
	v := mustTrainer(t)
	var in bytes.Buffer
	in.WriteString("# leading comment\n---\n")
	in.Write(readFixture(t, "clustertrainingruntime.yaml"))
	in.WriteString("---\n# a document with only a comment\n---\n")
	in.Write(readFixture(t, "trainjob-runtimepatches.yaml"))
	in.WriteString("---\n")
	in.Write(readFixture(t, "daemonset.yaml"))
	in.WriteString("---\n")

	reports, err := v.Validate(in.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	type id struct {
		doc        int
		kind, name string
		ok         bool
	}
	var got []id
	for _, r := range reports {
		got = append(got, id{r.Document, r.Kind, r.Name, r.OK()})
	}
	// The leading comment and the comment-only document count as documents 1 and 3.
	want := []id{
		{2, "ClusterTrainingRuntime", "torch-fixture", true},
		{4, "TrainJob", "patched-job", false},
		{5, "DaemonSet", "nccl-installer", true},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("reports = %+v, want %+v", got, want)
	}
	err = reports[1].Err()
	if err == nil || !strings.Contains(err.Error(), "TrainJob team-a/patched-job (document 4)") ||
		!strings.Contains(err.Error(), "pruned spec.runtimePatches[0]") {
		t.Errorf("Err() = %v; want it to name the object, its document and the pruned path", err)
	}
}

func TestValidateRejectsUnreadableInput(t *testing.T) {
	v := mustTrainer(t)
	for name, in := range map[string]string{
		"bad YAML":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n",
		"duplicate key": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n",
		"list document": "- apiVersion: v1\n  kind: ConfigMap\n",
		"scalar":        "just a string\n",
		"bad separator": "apiVersion: v1\nkind: ConfigMap\n--- oops\nkind: x\n",
	} {
		t.Run(name, func(t *testing.T) {
			reports, err := v.Validate([]byte(in))
			if err == nil {
				t.Fatalf("no error; reports %+v", reports)
			}
		})
	}
	t.Run("empty input", func(t *testing.T) {
		reports, err := v.Validate([]byte("---\n# nothing\n"))
		if err != nil || len(reports) != 0 {
			t.Fatalf("reports=%v err=%v, want none and no error", reports, err)
		}
	})
}

func TestNewRejectsBadCRDs(t *testing.T) {
	files, err := TrainerCRDFiles()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("TrainerCRDFiles returned %d files, want the 3 trainer CRDs", len(files))
	}
	for name, tc := range map[string]struct {
		files [][]byte
		want  string
	}{
		"not a CRD":      {[][]byte{readFixture(t, "daemonset.yaml")}, "want a apiextensions.k8s.io/v1 CustomResourceDefinition"},
		"unknown field":  {[][]byte{bytes.Replace(files[0], []byte("  scope: Cluster"), []byte("  scope: Cluster\n  scopes: x"), 1)}, "unknown field"},
		"loaded twice":   {[][]byte{files[0], files[0]}, "already defined"},
		"not structural": {[][]byte{[]byte(nonStructuralCRD)}, "not structural"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(tc.files...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: error %v, want one containing %q", err, tc.want)
			}
		})
	}
	t.Run("no CRDs knows built-ins only", func(t *testing.T) {
		v, err := New()
		if err != nil {
			t.Fatal(err)
		}
		r, err := v.ValidateObject(loadFixture(t, "trainjob.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		checkFindings(t, r.Findings, []Finding{{Kind: FindingUnknownKind, Path: "kind", Detail: "loaded: none"}})
	})
}

// nonStructuralCRD has a property without a type.
const nonStructuralCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            properties:
              size: {type: integer}
`

func TestConcurrentUse(t *testing.T) {
	v := mustTrainer(t)
	in := readFixture(t, "clustertrainingruntime-numprocpernode.yaml")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for range 5 {
				reports, err := v.Validate(in)
				if err != nil {
					errs <- err
					return
				}
				if len(reports) != 1 || len(reports[0].Findings) != 1 || reports[0].Findings[0].Path != "spec.mlPolicy.torch.numProcPerNode" {
					errs <- fmt.Errorf("unexpected reports %+v", reports)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func BenchmarkValidateRuntime(b *testing.B) {
	v := mustTrainer(b)
	in := readFixture(b, "clustertrainingruntime.yaml")
	b.ReportAllocs()
	cpuStart, cpuOK := processCPUTime()
	for b.Loop() {
		reports, err := v.Validate(in)
		if err != nil || len(reports) != 1 || !reports[0].OK() {
			b.Fatalf("reports=%+v err=%v", reports, err)
		}
	}
	if cpuEnd, ok := processCPUTime(); cpuOK && ok {
		b.ReportMetric(float64(cpuEnd-cpuStart)/float64(b.N), "cpu-ns/op")
	}
}
