package realize

import (
	"context"
	"slices"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
)

// A TrainJob of the gIB runtime that replaces the command, brings its image
// and adds a logging variable keeps the whole wiring through the linked
// trainer's own runtime framework: the multi-network annotations, the
// machine-type affinity, every env variable the installer's script
// exports (direct env survives a replaced command; a `source` line in the
// command would not), the mounts, and node as the pod's first container.
func TestGIBRuntimeRealizesWithItsWiring(t *testing.T) {
	in, err := shipped.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range fabric.GIB.MachineTypes {
		t.Run(mt.Name, func(t *testing.T) {
			rt, err := runtimes.RDMARuntime(in, runtimes.RDMAOptions{Interfaces: runtimes.ExampleRDMAInterfaces(), MachineType: mt.Name})
			if err != nil {
				t.Fatal(err)
			}
			const image = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
			job := &trainer.TrainJob{
				ObjectMeta: metav1.ObjectMeta{Name: "gib-job", Namespace: "team-a"},
				Spec: trainer.TrainJobSpec{
					RuntimeRef: trainer.RuntimeRef{Name: rt.Name, Kind: ptr.To(trainer.ClusterTrainingRuntimeKind), APIGroup: ptr.To(trainer.GroupVersion.Group)},
					Trainer: &trainer.Trainer{
						Image:   ptr.To(image),
						Command: []string{"torchrun", "train.py"},
						Env:     []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "INFO"}},
					},
				},
			}
			res, err := Realize(context.Background(), rt, job)
			if err != nil {
				t.Fatal(err)
			}
			want := rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template
			i := slices.IndexFunc(res.JobSet.Spec.ReplicatedJobs, func(r jobsetv1alpha2.ReplicatedJob) bool { return r.Name == "node" })
			if i < 0 {
				t.Fatalf("no node replicated job in %v", res.JobSet.Spec.ReplicatedJobs)
			}
			got := res.JobSet.Spec.ReplicatedJobs[i].Template.Spec.Template
			for _, k := range []string{runtimes.AnnotationDefaultInterface, runtimes.AnnotationInterfaces} {
				if got.Annotations[k] != want.Annotations[k] {
					t.Errorf("annotation %s = %q, want %q", k, got.Annotations[k], want.Annotations[k])
				}
			}
			if !equality.Semantic.DeepEqual(got.Spec.Affinity, want.Spec.Affinity) {
				t.Errorf("affinity %+v, want %+v", got.Spec.Affinity, want.Spec.Affinity)
			}
			if len(got.Spec.Containers) == 0 || got.Spec.Containers[0].Name != runtimes.NodeContainer {
				t.Fatalf("containers %v: node must stay first", got.Spec.Containers)
			}
			node := got.Spec.Containers[0]
			if node.Image != image || !slices.Equal(node.Command, job.Spec.Trainer.Command) {
				t.Errorf("image %q command %v, want the TrainJob's", node.Image, node.Command)
			}
			for _, e := range want.Spec.Containers[0].Env {
				if !slices.Contains(node.Env, e) {
					t.Errorf("realized env lacks %s=%s", e.Name, e.Value)
				}
			}
			for _, m := range want.Spec.Containers[0].VolumeMounts {
				if !slices.Contains(node.VolumeMounts, m) {
					t.Errorf("realized mounts lack %s at %s", m.Name, m.MountPath)
				}
			}
		})
	}
}
