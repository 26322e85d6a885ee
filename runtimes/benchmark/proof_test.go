package benchmark

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/validators/realize"
	"github.com/tcpxogen/tcpxogen/validators/schema"
)

// The derived runtime survives the API server unchanged: the real
// apiextensions validation against the linked trainer's CRDs, plus the
// trainer's TrainingRuntime webhook, with zero findings (nothing pruned).
func TestSchemaAcceptsDerived(t *testing.T) {
	data, err := yaml.Marshal(derive(t, shippedRuntime(t), testParams()))
	if err != nil {
		t.Fatal(err)
	}
	v, err := schema.NewTrainer()
	if err != nil {
		t.Fatal(err)
	}
	reports, err := v.Validate(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 {
		t.Fatalf("%d reports, want 1", len(reports))
	}
	if r := reports[0]; !r.OK() || r.Kind != trainer.TrainingRuntimeKind {
		t.Fatalf("kind %s: %v", r.Kind, r.Err())
	}
}

// realizeDerived realizes the derived runtime for a bare TrainJob, optionally
// asking for numNodes.
func realizeDerived(t *testing.T, rt *trainer.TrainingRuntime, numNodes *int32) *realize.Result {
	t.Helper()
	job := realize.BareTrainJob(rt)
	if job.Namespace != rt.Namespace || ptr.Deref(job.Spec.RuntimeRef.Kind, "") != trainer.TrainingRuntimeKind {
		t.Fatalf("bare TrainJob %s/%s refers to %v, want the TrainingRuntime in its namespace", job.Namespace, job.Name, job.Spec.RuntimeRef)
	}
	if numNodes != nil {
		job.Spec.Trainer = &trainer.Trainer{NumNodes: numNodes}
	}
	res, err := realize.Realize(context.Background(), rt, job)
	if err != nil {
		t.Fatalf("realize: %v", err)
	}
	return res
}

func jobSetRJob(t *testing.T, js *jobsetv1alpha2.JobSet, name string) *jobsetv1alpha2.ReplicatedJob {
	t.Helper()
	for i := range js.Spec.ReplicatedJobs {
		if js.Spec.ReplicatedJobs[i].Name == name {
			return &js.Spec.ReplicatedJobs[i]
		}
	}
	t.Fatalf("JobSet has no replicated job %q", name)
	return nil
}

func hostfile(t *testing.T, res *realize.Result) string {
	t.Helper()
	name := realize.BareTrainJobName + constants.MPIHostfileConfigMapSuffix
	for _, u := range res.Others {
		if u.GetKind() == "ConfigMap" && u.GetName() == name {
			hf, _, err := unstructured.NestedString(u.Object, "data", constants.MPIHostfileName)
			if err != nil {
				t.Fatal(err)
			}
			return hf
		}
	}
	t.Fatalf("no hostfile ConfigMap %s among %d other objects", name, len(res.Others))
	return ""
}

// The trainer's MPI plugin turns the derived runtime into a JobSet with one
// launcher and numNodes wired node pods, and a hostfile with one slot per
// GPU on every node.
func TestRealizationThroughMPIPlugin(t *testing.T) {
	s := shippedRuntime(t)
	rt := derive(t, s, testParams())
	gpus := shippedGPUs(t, s)
	if gpus != runtimes.GPUsPerNode {
		t.Fatalf("shipped GPU limit %d, want %d on A3 Mega", gpus, runtimes.GPUsPerNode)
	}

	for _, tc := range []struct {
		name     string
		numNodes *int32
		want     int32
	}{
		{"runtime numNodes", nil, DefaultNumNodes},
		{"TrainJob numNodes", ptr.To[int32](3), 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := realizeDerived(t, rt, tc.numNodes)
			js := res.JobSet
			launcher, node := jobSetRJob(t, js, constants.Launcher), jobSetRJob(t, js, constants.Node)
			if launcher.Replicas != 1 || ptr.Deref(launcher.Template.Spec.Parallelism, -1) != 1 {
				t.Errorf("launcher replicas %d parallelism %d, want 1 and 1", launcher.Replicas, ptr.Deref(launcher.Template.Spec.Parallelism, -1))
			}
			if node.Replicas != 1 || ptr.Deref(node.Template.Spec.Parallelism, -1) != tc.want {
				t.Errorf("node replicas %d parallelism %d, want 1 and %d", node.Replicas, ptr.Deref(node.Template.Spec.Parallelism, -1), tc.want)
			}

			lines := strings.Split(strings.TrimSuffix(hostfile(t, res), "\n"), "\n")
			if len(lines) != int(tc.want) {
				t.Fatalf("hostfile has %d hosts, want %d:\n%s", len(lines), tc.want, strings.Join(lines, "\n"))
			}
			for i, l := range lines {
				want := fmt.Sprintf("%s-%s-0-%d.%s slots=%d", realize.BareTrainJobName, constants.Node, i, realize.BareTrainJobName, gpus)
				if l != want {
					t.Errorf("hostfile line %d = %q, want %q", i, l, want)
				}
			}
		})
	}
}

// The realized node pod carries everything the derived node pod has: the
// only changes are the MPI plugin's SSH key volume and its mount.
func TestRealizedNodePodKeepsTheWiring(t *testing.T) {
	rt := derive(t, shippedRuntime(t), testParams())
	res := realizeDerived(t, rt, nil)
	realized, err := wiring.JobSetPodTemplate(res.JobSet, constants.Node)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range wiring.Diff(wiring.Of(benchNodePod(t, rt), runtimes.NodeContainer), wiring.Of(realized, runtimes.NodeContainer)) {
		if !c.IsAddition() {
			t.Errorf("wiring not realized: %s", c)
		}
		got = append(got, c.String())
	}
	want := []string{
		"volume added: volume " + constants.MPISSHAuthVolumeName + " (<none> -> secret:" + realize.BareTrainJobName + constants.MPISSHAuthSecretSuffix + ")",
		"mount added: mount " + SSHAuthMountPath + " (<none> -> " + constants.MPISSHAuthVolumeName + ")",
	}
	if !slices.Equal(got, want) {
		t.Errorf("realized node pod changes:\n  %s\nwant only the MPI plugin's SSH key:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	// What the node runs survives too: a TrainJob-less build does not
	// replace the sshd container's image or command.
	nc := container(t, realized, runtimes.NodeContainer)
	if bn := benchNode(t, rt); nc.Image != bn.Image || !slices.Equal(nc.Command, bn.Command) || !slices.Equal(nc.Args, bn.Args) {
		t.Errorf("realized node runs %s %q %q, derived %s %q %q", nc.Image, nc.Command, nc.Args, bn.Image, bn.Command, bn.Args)
	}
}

// The realized launcher is the benchmark's: no GPUs, no TCPXO annotations,
// wired by the MPI plugin (which proves the container name is the one the
// plugin looks for), starting after the nodes, and ending the JobSet.
func TestRealizedLauncher(t *testing.T) {
	s := shippedRuntime(t)
	rt := derive(t, s, testParams())
	res := realizeDerived(t, rt, nil)
	pod, err := wiring.JobSetPodTemplate(res.JobSet, constants.Launcher)
	if err != nil {
		t.Fatal(err)
	}
	for k := range pod.Annotations {
		if strings.HasPrefix(k, "networking.gke.io/") || strings.HasPrefix(k, "devices.gke.io/") {
			t.Errorf("realized launcher carries TCPXO annotation %s", k)
		}
	}
	if len(pod.Spec.InitContainers) != 0 {
		t.Errorf("realized launcher has init containers %v", pod.Spec.InitContainers)
	}
	lc := container(t, pod, constants.Node)
	for _, l := range []corev1.ResourceList{lc.Resources.Limits, lc.Resources.Requests} {
		if _, ok := l[runtimes.GPUResource]; ok {
			t.Errorf("realized launcher requests GPUs: %v", lc.Resources)
		}
	}
	env := map[string]string{}
	for _, e := range lc.Env {
		env[e.Name] = e.Value
	}
	if got, want := env[constants.OpenMPIEnvHostFileLocation], constants.MPIHostfileDir+"/"+constants.MPIHostfileName; got != want {
		t.Errorf("%s = %q, want %q: the MPI plugin did not wire the launcher", constants.OpenMPIEnvHostFileLocation, got, want)
	}
	for _, e := range shippedNodeContainer(t, s).Env {
		if forwarded(e.Name) && env[e.Name] != e.Value {
			t.Errorf("realized launcher %s = %q, shipped worker %q", e.Name, env[e.Name], e.Value)
		}
	}
	if !slices.ContainsFunc(lc.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == constants.MPIHostfileDir }) ||
		!slices.ContainsFunc(lc.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == SSHAuthMountPath }) {
		t.Errorf("realized launcher mounts = %+v, want the hostfile and the SSH keys", lc.VolumeMounts)
	}
	if bl := launcherOf(t, rt); !slices.Equal(lc.Args, bl.Args) || !slices.Equal(lc.Command, bl.Command) {
		t.Errorf("realized launcher runs %q %q, derived %q %q", lc.Command, lc.Args, bl.Command, bl.Args)
	}

	launcher := jobSetRJob(t, res.JobSet, constants.Launcher)
	if want := []jobsetv1alpha2.DependsOn{{Name: constants.Node, Status: jobsetv1alpha2.DependencyReady}}; !slices.Equal(launcher.DependsOn, want) {
		t.Errorf("realized launcher dependsOn = %+v, want %+v", launcher.DependsOn, want)
	}
	if ptr.Deref(launcher.Template.Spec.BackoffLimit, -1) != 0 {
		t.Errorf("realized launcher backoffLimit = %v, want 0", launcher.Template.Spec.BackoffLimit)
	}
	if sp := res.JobSet.Spec.SuccessPolicy; sp == nil || !slices.Equal(sp.TargetReplicatedJobs, []string{constants.Launcher}) {
		t.Errorf("realized successPolicy = %+v, want the launcher", sp)
	}
}

// The launcher copies the SSH private key to a 0600 file because the linked
// trainer mounts it with a mode OpenSSH refuses for the key's owner (root).
// When a trainer upgrade mounts it owner-only, this test says the prelude
// can go.
func TestTrainerStillMountsKeyTooOpen(t *testing.T) {
	res := realizeDerived(t, derive(t, shippedRuntime(t), testParams()), nil)
	pod, err := wiring.JobSetPodTemplate(res.JobSet, constants.Launcher)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == constants.MPISSHAuthVolumeName })
	if i < 0 || pod.Spec.Volumes[i].Secret == nil {
		t.Fatalf("realized launcher has no %s Secret volume", constants.MPISSHAuthVolumeName)
	}
	sec := pod.Spec.Volumes[i].Secret
	mode := ptr.Deref(sec.DefaultMode, corev1.SecretVolumeSourceDefaultMode)
	for _, it := range sec.Items {
		if it.Path == constants.MPISSHPrivateKeyFile && it.Mode != nil {
			mode = *it.Mode
		}
	}
	if mode&0o077 == 0 {
		t.Errorf("trainer %s mounts the private key with mode %#o: OpenSSH accepts it; drop the key-copy prelude and -i from the launcher", realize.TrainerVersion(), mode)
	}
}
