package realize

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/tcpxogen/tcpxogen/validators/linkedtrainer"
)

var update = flag.Bool("update", false, "rewrite crddefaults/<version>.json and testdata/compat-<version>.json from the linked trainer")

// moduleCRDSchemas reads the full v1alpha1 schema of every CRD of the linked
// trainer version, as embedded byte for byte from its module (see package
// linkedtrainer).
func moduleCRDSchemas(t *testing.T) map[string]*apiextensionsv1.JSONSchemaProps {
	t.Helper()
	files, err := linkedtrainer.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*apiextensionsv1.JSONSchemaProps{}
	for i, raw := range files {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
			t.Fatalf("trainer %s CRD %d: %v", TrainerVersion(), i, err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Name == trainer.SchemeGroupVersion.Version && v.Schema != nil {
				out[crd.Spec.Names.Kind] = v.Schema.OpenAPIV3Schema
			}
		}
	}
	for _, kind := range []string{trainer.TrainJobKind, trainer.TrainingRuntimeKind, trainer.ClusterTrainingRuntimeKind} {
		if out[kind] == nil {
			t.Fatalf("no %s %s schema among the trainer %s CRDs", kind, trainer.SchemeGroupVersion.Version, TrainerVersion())
		}
	}
	return out
}

// projectForDefaults keeps what structural defaulting reads (see
// defaults.go): a node with a default whole (minus descriptions), and on the
// way to one only type, nullable, properties, items and
// additionalProperties. It returns nil for a subtree without defaults.
func projectForDefaults(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	if s == nil {
		return nil
	}
	if s.Default != nil {
		cp := s.DeepCopy()
		stripDescriptions(cp)
		return cp
	}
	out := &apiextensionsv1.JSONSchemaProps{Type: s.Type, Nullable: s.Nullable}
	keep := false
	for name, p := range s.Properties {
		if pp := projectForDefaults(&p); pp != nil {
			if out.Properties == nil {
				out.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
			}
			out.Properties[name] = *pp
			keep = true
		}
	}
	if s.Items != nil {
		if pi := projectForDefaults(s.Items.Schema); pi != nil {
			out.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: pi}
			keep = true
		}
	}
	if s.AdditionalProperties != nil {
		if pa := projectForDefaults(s.AdditionalProperties.Schema); pa != nil {
			out.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: pa}
			keep = true
		}
	}
	if !keep {
		return nil
	}
	return out
}

func stripDescriptions(s *apiextensionsv1.JSONSchemaProps) {
	if s == nil {
		return
	}
	s.Description = ""
	for k, p := range s.Properties {
		stripDescriptions(&p)
		s.Properties[k] = p
	}
	if s.Items != nil {
		stripDescriptions(s.Items.Schema)
		for i := range s.Items.JSONSchemas {
			stripDescriptions(&s.Items.JSONSchemas[i])
		}
	}
	if s.AdditionalProperties != nil {
		stripDescriptions(s.AdditionalProperties.Schema)
	}
}

func renderCRDDefaults(t *testing.T) []byte {
	t.Helper()
	file := crdDefaultsFile{
		Source:  TrainerModule + "@" + TrainerVersion() + "/manifests/base/crds",
		Version: trainer.SchemeGroupVersion.Version,
		Schemas: map[string]*apiextensionsv1.JSONSchemaProps{},
	}
	for kind, s := range moduleCRDSchemas(t) {
		file.Schemas[kind] = projectForDefaults(s)
	}
	raw, err := json.MarshalIndent(file, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return append(raw, '\n')
}

// TestCRDDefaultsMatchModule keeps the embedded projection equal to what the
// linked trainer's CRDs give today; -update rewrites it.
func TestCRDDefaultsMatchModule(t *testing.T) {
	want := renderCRDDefaults(t)
	path := crdDefaultsPath(TrainerVersion())
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale against the trainer %s CRDs; run `go test ./validators/realize -run TestCRDDefaultsMatchModule -update` with the same -modfile", path, TrainerVersion())
	}
}

// TestProjectionDefaultsLikeFullCRD shows the projection is not just equal
// to what the generator makes but defaults exactly like the full schemas, on
// objects that exercise nested defaults.
func TestProjectionDefaultsLikeFullCRD(t *testing.T) {
	full := &defaulter{version: "full", schemas: map[string]*structuralschema.Structural{}}
	for kind, s := range moduleCRDSchemas(t) {
		ss, err := structuralFromV1(s)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		full.schemas[kind] = ss
	}
	projected, err := linkedDefaulter()
	if err != nil {
		t.Fatal(err)
	}

	job := &trainer.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"},
		Spec: trainer.TrainJobSpec{
			RuntimeRef: trainer.RuntimeRef{Name: "r"},
			Trainer: &trainer.Trainer{
				Env:              []corev1.EnvVar{{Name: "A", Value: "1"}},
				ResourcesPerNode: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			},
		},
	}
	for _, c := range []struct {
		kind string
		obj  apiruntime.Object
	}{
		{trainer.ClusterTrainingRuntimeKind, mustShipped(t)},
		{trainer.TrainingRuntimeKind, mustMPI(t)},
		{trainer.TrainJobKind, job},
	} {
		a, b := c.obj.DeepCopyObject(), c.obj.DeepCopyObject()
		if err := full.apply(c.kind, a); err != nil {
			t.Fatalf("%s, full CRD: %v", c.kind, err)
		}
		if err := projected.apply(c.kind, b); err != nil {
			t.Fatalf("%s, projection: %v", c.kind, err)
		}
		if reflect.DeepEqual(a, c.obj) {
			t.Errorf("%s: defaulting changed nothing; the comparison would prove nothing", c.kind)
		}
		if !reflect.DeepEqual(a, b) {
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			t.Errorf("%s: full CRD and projection default differently:\nfull:       %s\nprojection: %s", c.kind, ja, jb)
		}
	}
}

// TestDefaultsApplied pins the CRD defaults the runtime framework depends
// on, as the probes listed them.
func TestDefaultsApplied(t *testing.T) {
	d, err := linkedDefaulter()
	if err != nil {
		t.Fatal(err)
	}

	job := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "j"}, Spec: trainer.TrainJobSpec{RuntimeRef: trainer.RuntimeRef{Name: "r"}}}
	if err := d.apply(trainer.TrainJobKind, job); err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(job.Spec.RuntimeRef.APIGroup, ""); got != "trainer.kubeflow.org" {
		t.Errorf("runtimeRef.apiGroup = %q", got)
	}
	if got := ptr.Deref(job.Spec.RuntimeRef.Kind, ""); got != trainer.ClusterTrainingRuntimeKind {
		t.Errorf("runtimeRef.kind = %q", got)
	}
	if job.Spec.Suspend == nil || *job.Spec.Suspend {
		t.Errorf("suspend = %v, want false", job.Spec.Suspend)
	}
	if got := ptr.Deref(job.Spec.ManagedBy, ""); got != "trainer.kubeflow.org/trainjob-controller" {
		t.Errorf("managedBy = %q", got)
	}

	// A user's explicit value is never overwritten.
	explicit := &trainer.TrainJob{Spec: trainer.TrainJobSpec{RuntimeRef: trainer.RuntimeRef{Name: "r", Kind: ptr.To(trainer.TrainingRuntimeKind)}, Suspend: ptr.To(true)}}
	if err := d.apply(trainer.TrainJobKind, explicit); err != nil {
		t.Fatal(err)
	}
	if *explicit.Spec.RuntimeRef.Kind != trainer.TrainingRuntimeKind || !*explicit.Spec.Suspend {
		t.Errorf("explicit values overwritten: kind=%q suspend=%v", *explicit.Spec.RuntimeRef.Kind, *explicit.Spec.Suspend)
	}

	rt := mustMPI(t)
	rt.Spec.MLPolicy.MPI = &trainer.MPIMLPolicySource{}
	rt.Spec.Template.Spec.ReplicatedJobs[0].Replicas = 0
	rt.Spec.Template.Spec.ReplicatedJobs[0].GroupName = ""
	rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 2222}}
	if err := d.apply(trainer.TrainingRuntimeKind, rt); err != nil {
		t.Fatal(err)
	}
	mpi := rt.Spec.MLPolicy.MPI
	if got := ptr.Deref(mpi.NumProcPerNode, 0); got != 1 {
		t.Errorf("mpi.numProcPerNode = %d, want 1", got)
	}
	if got := ptr.Deref(mpi.MPIImplementation, ""); got != trainer.MPIImplementationOpenMPI {
		t.Errorf("mpi.mpiImplementation = %q", got)
	}
	if got := ptr.Deref(mpi.SSHAuthMountPath, ""); got != "/root/.ssh" {
		t.Errorf("mpi.sshAuthMountPath = %q", got)
	}
	if mpi.RunLauncherAsNode == nil || *mpi.RunLauncherAsNode {
		t.Errorf("mpi.runLauncherAsNode = %v, want false", mpi.RunLauncherAsNode)
	}
	rj := rt.Spec.Template.Spec.ReplicatedJobs[0]
	if rj.GroupName != "default" || rj.Replicas != 1 {
		t.Errorf("replicatedJob groupName=%q replicas=%d, want default/1", rj.GroupName, rj.Replicas)
	}
	if got := rj.Template.Spec.Template.Spec.Containers[0].Ports[0].Protocol; got != corev1.ProtocolTCP {
		t.Errorf("nested pod-template default: port protocol = %q, want TCP", got)
	}
}

func TestLoadDefaulterUnknownVersion(t *testing.T) {
	_, err := loadDefaulter(crdDefaultsFS, "v0.0.0-nonexistent")
	if err == nil || !strings.Contains(err.Error(), "v0.0.0-nonexistent") {
		t.Fatalf("err = %v, want ErrNoCRDDefaults naming the version", err)
	}
	if !errors.Is(err, ErrNoCRDDefaults) {
		t.Fatalf("err = %v does not wrap ErrNoCRDDefaults", err)
	}
}
