package agreement

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/validators/schema"
)

const mapping = "eth1=gpu-nic-1,eth2=gpu-nic-2,eth3=gpu-nic-3,eth4=gpu-nic-4,eth5=gpu-nic-5,eth6=gpu-nic-6,eth7=gpu-nic-7,eth8=gpu-nic-8"

// The path of the shipped node container, as differences name it.
const nodeContainer = "spec.template.spec.replicatedJobs[name=node].template.spec.template.spec.containers[name=node]"

func render(t *testing.T, m string) *trainer.ClusterTrainingRuntime {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := bom.FindRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	in, err := shipped.LoadInputs(root)
	if err != nil {
		t.Fatal(err)
	}
	mm, err := interfaces.Parse(m)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtimes.TorchRuntime(in, runtimes.Options{Interfaces: mm})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func validator(t *testing.T) *schema.Validator {
	t.Helper()
	v, err := trainerValidator()
	if err != nil {
		t.Fatalf("loading the trainer CRDs: %v", err)
	}
	return v
}

func nodeEnv(rt *trainer.ClusterTrainingRuntime) []corev1.EnvVar {
	return rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Env
}

func TestCheckEqual(t *testing.T) {
	rendered := render(t, mapping)
	if diffs := Check(rendered.DeepCopy(), rendered); diffs != nil {
		t.Errorf("an unchanged copy disagrees:\n%s", strings.Join(diffs, "\n"))
	}
}

// What the API server and the tools around it add to a deployed object is
// not a disagreement: server metadata, status, foreign labels and
// annotations, and the CRD defaults.
func TestCheckIgnoresServerFields(t *testing.T) {
	rendered := render(t, mapping)

	// The deployed object carries the CRD defaults, as the server stores it.
	rep, err := validator(t).ValidateObject(toUnstructured(t, rendered))
	if err != nil || rep.Defaulted == nil {
		t.Fatalf("defaulting the rendered runtime: %v %v", err, rep.Err())
	}
	deployed := &trainer.ClusterTrainingRuntime{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(rep.Defaulted.Object, deployed); err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(deployed.Spec, rendered.Spec) {
		t.Fatal("the CRDs default nothing in the rendered spec; this test no longer shows that defaults are ignored")
	}

	deployed.UID = "0b6f2e6c-1a0d-4c36-9a55-3f1f5f0e0a11"
	deployed.ResourceVersion = "48213"
	deployed.Generation = 3
	deployed.CreationTimestamp = metav1.NewTime(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	deployed.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "trainer.kubeflow.org/v1alpha1"}}
	deployed.Labels["argocd.argoproj.io/instance"] = "tcpxo"
	deployed.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"trainer.kubeflow.org/v1alpha1"}`}

	if diffs := Check(deployed, rendered); diffs != nil {
		t.Errorf("server-populated fields are reported as differences:\n%s", strings.Join(diffs, "\n"))
	}
}

func TestCheckReportsDifferences(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(d *trainer.ClusterTrainingRuntime)
		want   []string
	}{
		{
			name: "a network name in the interfaces annotation",
			change: func(d *trainer.ClusterTrainingRuntime) {
				*d = *render(t, strings.Replace(mapping, "eth3=gpu-nic-3", "eth3=storage-net", 1))
			},
			want: []string{`spec.template.spec.replicatedJobs[name=node].template.spec.template.metadata.annotations["networking.gke.io/interfaces"](JSON)[3].network: deployed "storage-net" vs rendered "gpu-nic-3"`},
		},
		{
			name: "an env value",
			change: func(d *trainer.ClusterTrainingRuntime) {
				env := nodeEnv(d)
				for i := range env {
					if env[i].Name == "NCCL_FASTRAK_IFNAME" {
						env[i].Value = "eth1,eth2"
					}
				}
			},
			want: []string{nodeContainer + `.env[name=NCCL_FASTRAK_IFNAME].value: deployed "eth1,eth2" vs rendered "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8"`},
		},
		{
			name: "an env variable removed",
			change: func(d *trainer.ClusterTrainingRuntime) {
				c := &d.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0]
				c.Env = c.Env[1:]
			},
			want: []string{nodeContainer + `.env[name=` + nodeEnv(render(t, mapping))[0].Name + `]: deployed absent vs rendered {`},
		},
		{
			name: "env order",
			change: func(d *trainer.ClusterTrainingRuntime) {
				env := nodeEnv(d)
				env[0], env[1] = env[1], env[0]
			},
			want: []string{nodeContainer + `.env: order differs from element 0: deployed [` + nodeEnv(render(t, mapping))[1].Name + ", " + nodeEnv(render(t, mapping))[0].Name + ", " + nodeEnv(render(t, mapping))[2].Name + ", …] vs rendered [" + nodeEnv(render(t, mapping))[0].Name + ", "},
		},
		{
			name: "a label the runtime sets",
			change: func(d *trainer.ClusterTrainingRuntime) {
				d.Labels[runtimes.FrameworkLabel] = "mpi"
			},
			want: []string{`metadata.labels["trainer.kubeflow.org/framework"]: deployed "mpi" vs rendered "torch"`},
		},
		{
			name: "the daemon sidecar dropped",
			change: func(d *trainer.ClusterTrainingRuntime) {
				d.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.InitContainers = nil
			},
			want: []string{`spec.template.spec.replicatedJobs[name=node].template.spec.template.spec.initContainers: deployed absent vs rendered [{`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rendered := render(t, mapping)
			deployed := rendered.DeepCopy()
			tc.change(deployed)
			diffs := Check(deployed, rendered)
			if len(diffs) != len(tc.want) {
				t.Fatalf("got %d differences, want %d:\n%s", len(diffs), len(tc.want), strings.Join(diffs, "\n"))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(diffs[i], w) {
					t.Errorf("difference %d:\n got  %s\n want %s…", i, diffs[i], w)
				}
			}
		})
	}
}

// A long string that differs is shown around the difference, not whole.
func TestCheckShowsLongStringsAroundTheDifference(t *testing.T) {
	rendered := render(t, mapping)
	deployed := rendered.DeepCopy()
	pod := &deployed.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template
	dev := pod.Annotations[runtimes.AnnotationDaemonDevices]
	pod.Annotations[runtimes.AnnotationDaemonDevices] = strings.Replace(dev, "/dev/nvidia7", "/dev/nvidia9", 1)
	diffs := Check(deployed, rendered)
	if len(diffs) != 1 {
		t.Fatalf("want one difference, got %q", diffs)
	}
	if !strings.Contains(diffs[0], `nvidia9`) || !strings.Contains(diffs[0], `nvidia7`) || strings.Contains(diffs[0], "nvidia0") {
		t.Errorf("the difference should show both sides around /dev/nvidia7 only: %s", diffs[0])
	}
}

// Check never passes objects it could not compare.
func TestCheckFailsClosed(t *testing.T) {
	rendered := render(t, mapping)
	diffs := Check(nil, rendered)
	if len(diffs) != 1 || !strings.Contains(diffs[0], "comparison not possible") || !strings.Contains(diffs[0], "deployed ClusterTrainingRuntime is nil") {
		t.Errorf("Check(nil, rendered) = %q", diffs)
	}
	if _, err := Compare(nil, rendered, rendered); err == nil {
		t.Error("Compare without a validator succeeded")
	}
	// A validator without the trainer CRDs cannot default the runtime.
	empty, err := schema.New()
	if err != nil {
		t.Fatal(err)
	}
	if diffs, err := Compare(empty, rendered, rendered); err == nil || diffs != nil {
		t.Errorf("Compare with no CRDs = %q, %v; want an error", diffs, err)
	}
}

func toUnstructured(t *testing.T, obj *trainer.ClusterTrainingRuntime) *unstructured.Unstructured {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: u}
}
