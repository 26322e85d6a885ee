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
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/tcpxogen/tcpxogen/internal/atomicfile"
)

var update = flag.Bool("update", false, "rewrite crddefaults/<version>.json and testdata/compat-<version>.json from the linked trainer")

// TestCRDDefaultsMatchModule keeps the committed projection equal to what
// RenderCRDDefaults makes of the linked trainer's CRDs today. go generate
// ./... rewrites it (tools/compat --crd-defaults); so does -update.
func TestCRDDefaultsMatchModule(t *testing.T) {
	want, err := RenderCRDDefaults()
	if err != nil {
		t.Fatal(err)
	}
	path := crdDefaultsPath(TrainerVersion())
	if *update {
		if err := atomicfile.Write(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with go generate ./...)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale against the trainer %s CRDs; regenerate it with go generate ./... (or this test's -update, with the same -modfile)", path, TrainerVersion())
	}
}

// TestProjectionDefaultsLikeFullCRD shows the projection is not just equal
// to what the generator makes but defaults exactly like the full schemas, on
// objects that exercise nested defaults.
func TestProjectionDefaultsLikeFullCRD(t *testing.T) {
	full := &defaulter{version: "full", schemas: map[string]*structuralschema.Structural{}}
	schemas, err := moduleCRDSchemas()
	if err != nil {
		t.Fatal(err)
	}
	for kind, s := range schemas {
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
