package realize

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"

	"github.com/tcpxogen/tcpxogen/internal/launch"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
)

// TestRendezvousEnvMatchesTorchPlugin holds launch.RendezvousEnv to the trainer's
// torch plugin. EnforceMLPolicy in pkg/runtime/framework/plugins/torch/torch.go
// (v2.2.0 and v2.3.0) upserts PET_NNODES, PET_NPROC_PER_NODE and
// PET_NODE_RANK into the node container, then PET_MASTER_ADDR and
// PET_MASTER_PORT unless the command is torchtune's; its webhook reserves
// the same five names (constants.TorchRunReservedEnvNames). Realized, a
// TrainJob with spec.trainer gets exactly these PET_ variables.
func TestRendezvousEnvMatchesTorchPlugin(t *testing.T) {
	if got, want := sets.List(sets.New(launch.RendezvousEnv...)), sets.List(constants.TorchRunReservedEnvNames); !slices.Equal(got, want) {
		t.Errorf("launch.RendezvousEnv = %v, the trainer reserves %v", got, want)
	}
	rt, err := ShippedRuntime()
	if err != nil {
		t.Fatal(err)
	}
	job := BareTrainJob(rt)
	job.Spec.Trainer = &trainer.Trainer{}
	res, err := Realize(context.Background(), rt, job)
	if err != nil {
		t.Fatal(err)
	}
	pod, err := wiring.JobSetPodTemplate(res.JobSet, constants.Node)
	if err != nil {
		t.Fatal(err)
	}
	var pet []string
	for _, c := range pod.Spec.Containers {
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "PET_") {
				pet = append(pet, c.Name+" "+e.Name)
			}
		}
	}
	var want []string
	for _, n := range launch.RendezvousEnv {
		want = append(want, constants.Node+" "+n)
	}
	slices.Sort(pet)
	slices.Sort(want)
	if !slices.Equal(pet, want) {
		t.Errorf("realized PET_ variables = %v, want %v", pet, want)
	}
}

// realizedTrainerEmpty realizes the shipped runtime with an empty
// spec.trainer: a launch that passes, for the edge cases below to break.
func realizedTrainerEmpty(t *testing.T) (client.Object, *trainer.TrainJob, *jobsetv1alpha2.JobSet) {
	t.Helper()
	rt, err := ShippedRuntime()
	if err != nil {
		t.Fatal(err)
	}
	job := BareTrainJob(rt)
	job.Spec.Trainer = &trainer.Trainer{}
	res, err := Realize(context.Background(), rt, job)
	if err != nil {
		t.Fatal(err)
	}
	return rt, job, res.JobSet
}

func nodeContainer(t *testing.T, js *jobsetv1alpha2.JobSet) *corev1.Container {
	t.Helper()
	pod, err := wiring.JobSetPodTemplate(js, constants.Node)
	if err != nil {
		t.Fatal(err)
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == constants.Node {
			return &pod.Spec.Containers[i]
		}
	}
	t.Fatal("no node container")
	return nil
}

func setEnv(c *corev1.Container, name, value string) {
	for i := range c.Env {
		if c.Env[i].Name == name {
			c.Env[i] = corev1.EnvVar{Name: name, Value: value}
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
}

func dropEnv(c *corev1.Container, names ...string) {
	c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return slices.Contains(names, e.Name) })
}

// TestJudgeLaunch covers what the matrix cannot produce from a real
// trainer: each check failing on its own, and the torchtune exception.
func TestJudgeLaunch(t *testing.T) {
	rt, base, baseJS := realizedTrainerEmpty(t)
	for _, tc := range []struct {
		name    string
		job     func(*trainer.TrainJob)
		js      func(*jobsetv1alpha2.JobSet, *corev1.Container)
		failing []string
		want    []string // substrings of the problems, causes and fixes
		note    string   // a substring of the notes
	}{
		{name: "as realized", note: "one process per visible GPU, 8 here"},
		{
			name: "master variables missing",
			js: func(_ *jobsetv1alpha2.JobSet, c *corev1.Container) {
				dropEnv(c, constants.TorchEnvMasterAddr, constants.TorchEnvMasterPort)
			},
			failing: []string{LaunchRendezvous},
			want:    []string{"no PET_MASTER_ADDR, PET_MASTER_PORT", "did not inject them"},
		},
		{
			name: "torchtune needs no master variables",
			job:  func(j *trainer.TrainJob) { j.Spec.Trainer.Command = constants.TorchTuneEntrypoint },
			js: func(_ *jobsetv1alpha2.JobSet, c *corev1.Container) {
				dropEnv(c, constants.TorchEnvMasterAddr, constants.TorchEnvMasterPort)
			},
			note: "torchtune gets the rendezvous endpoint as an argument",
		},
		{
			name: "processes per node not a number",
			js: func(_ *jobsetv1alpha2.JobSet, c *corev1.Container) {
				setEnv(c, constants.TorchEnvNumProcPerNode, "eight")
			},
			failing: []string{LaunchProcesses},
			want:    []string{`PET_NPROC_PER_NODE="eight"`},
		},
		{
			name:    "auto without GPUs",
			js:      func(_ *jobsetv1alpha2.JobSet, c *corev1.Container) { c.Resources = corev1.ResourceRequirements{} },
			failing: []string{LaunchProcesses},
			want:    []string{"one process per host CPU", "no nvidia.com/gpu limit"},
		},
		{
			name: "numProcPerNode equal to the GPUs",
			job:  func(j *trainer.TrainJob) { j.Spec.Trainer.NumProcPerNode = ptr.To[int32](8) },
			js:   func(_ *jobsetv1alpha2.JobSet, c *corev1.Container) { setEnv(c, constants.TorchEnvNumProcPerNode, "8") },
			note: "PET_NPROC_PER_NODE=8: one process per GPU",
		},
		{
			name: "parallelism other than the node count",
			js: func(js *jobsetv1alpha2.JobSet, _ *corev1.Container) {
				replicatedJob(js, constants.Node).Template.Spec.Parallelism = ptr.To[int32](3)
			},
			failing: []string{LaunchNodes},
			want:    []string{"the runtime's mlPolicy.numNodes asks for 2 node(s), but the JobSet runs 1 × 3 node pods"},
		},
		{
			name: "PET_NNODES other than the node count",
			job:  func(j *trainer.TrainJob) { j.Spec.Trainer.NumNodes = ptr.To[int32](4) },
			js: func(js *jobsetv1alpha2.JobSet, _ *corev1.Container) {
				replicatedJob(js, constants.Node).Template.Spec.Parallelism = ptr.To[int32](4)
			},
			failing: []string{LaunchNodes},
			want:    []string{"spec.trainer.numNodes asks for 4 node(s), but PET_NNODES=2"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job, js := base.DeepCopy(), baseJS.DeepCopy()
			if tc.job != nil {
				tc.job(job)
			}
			if tc.js != nil {
				tc.js(js, nodeContainer(t, js))
			}
			l, err := JudgeLaunch(rt, job, js)
			if err != nil {
				t.Fatal(err)
			}
			if !l.Judged {
				t.Fatalf("not judged: %s", l.Summary)
			}
			var failing []string
			var text strings.Builder
			for _, p := range l.Problems {
				failing = append(failing, p.Check)
				text.WriteString(p.Problem + "\n" + p.Cause + "\n" + p.Fix + "\n")
				if p.Fix == "" {
					t.Errorf("problem without a fix: %+v", p)
				}
			}
			if !slices.Equal(failing, tc.failing) {
				t.Errorf("failing checks = %q, want %q\n%+v", failing, tc.failing, l)
			}
			for _, w := range tc.want {
				if !strings.Contains(text.String(), w) {
					t.Errorf("problems lack %q:\n%s", w, text.String())
				}
			}
			if tc.note != "" && !slices.ContainsFunc(l.Notes, func(n string) bool { return strings.Contains(n, tc.note) }) {
				t.Errorf("notes lack %q: %q", tc.note, l.Notes)
			}
			if got := l.OK(); got != (len(tc.failing) == 0) || !strings.HasPrefix(l.Summary, "launch ") {
				t.Errorf("OK() = %v, summary %q", got, l.Summary)
			}
		})
	}
}

func TestJudgeLaunchNotTorch(t *testing.T) {
	mpi := mustMPI(t)
	job := BareTrainJob(mpi)
	res, err := Realize(context.Background(), mpi, job)
	if err != nil {
		t.Fatal(err)
	}
	l, err := JudgeLaunch(mpi, job, res.JobSet)
	if err != nil {
		t.Fatal(err)
	}
	if l.Judged || !l.OK() || !strings.Contains(l.Summary, "no torch policy") {
		t.Errorf("MPI runtime: %+v", l)
	}
}

func TestLaunchKey(t *testing.T) {
	rl := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	withTrainer := func(tr *trainer.Trainer) *trainer.TrainJob {
		j := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "j"}}
		j.Spec.Trainer = tr
		return j
	}
	patch := func(c trainer.ContainerPatch, meta *metav1.ObjectMeta) *trainer.TrainJob {
		j := withTrainer(nil)
		j.Spec.RuntimePatches = []trainer.RuntimePatch{{Manager: "x", TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{
			Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: []trainer.ReplicatedJobPatch{{Name: constants.Node, Template: &trainer.JobTemplatePatch{
				Metadata: meta,
				Spec:     &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{Spec: &trainer.PodSpecPatch{Containers: []trainer.ContainerPatch{c}}}},
			}}}},
		}}}}
		return j
	}
	key := func(j *trainer.TrainJob) string {
		t.Helper()
		k, err := LaunchKey(j)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	same := [][2]*trainer.TrainJob{
		// What reaches neither the process count nor the GPUs.
		{withTrainer(&trainer.Trainer{}), withTrainer(&trainer.Trainer{NumNodes: ptr.To[int32](16), Image: ptr.To("x"), Args: []string{"a"},
			Env: []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "INFO"}}})},
		{withTrainer(&trainer.Trainer{ResourcesPerNode: &corev1.ResourceRequirements{Limits: rl("cpu", "16", "memory", "64Gi")}}),
			withTrainer(&trainer.Trainer{ResourcesPerNode: &corev1.ResourceRequirements{Limits: rl("cpu", "16000m", "memory", "1Ti", "example.com/nic", "1")}})},
		{withTrainer(nil), patch(trainer.ContainerPatch{Name: constants.Node, VolumeMounts: []corev1.VolumeMount{{Name: "v", MountPath: "/v"}}}, nil)},
	}
	for _, p := range same {
		if a, b := key(p[0]), key(p[1]); a != b {
			t.Errorf("keys differ, want equal:\n%s\n%s", a, b)
		}
	}
	distinct := []*trainer.TrainJob{
		withTrainer(nil),
		withTrainer(&trainer.Trainer{}),
		withTrainer(&trainer.Trainer{NumProcPerNode: ptr.To[int32](8)}),
		withTrainer(&trainer.Trainer{Command: constants.TorchTuneEntrypoint}),
		withTrainer(&trainer.Trainer{ResourcesPerNode: &corev1.ResourceRequirements{}}),
		withTrainer(&trainer.Trainer{ResourcesPerNode: &corev1.ResourceRequirements{Limits: corev1.ResourceList{}}}),
		withTrainer(&trainer.Trainer{ResourcesPerNode: &corev1.ResourceRequirements{Limits: rl("cpu", "16")}}),
		withTrainer(&trainer.Trainer{ResourcesPerNode: &corev1.ResourceRequirements{Requests: rl("cpu", "16")}}),
		withTrainer(&trainer.Trainer{ResourcesPerNode: &corev1.ResourceRequirements{Limits: rl("cpu", "8")}}),
		// The torch plugin counts any resource whose name says gpu.
		withTrainer(&trainer.Trainer{ResourcesPerNode: &corev1.ResourceRequirements{Limits: rl("amd.com/gpu", "8")}}),
		patch(trainer.ContainerPatch{Name: constants.Node, Env: []corev1.EnvVar{{Name: constants.TorchEnvNumNodes, Value: "2"}}}, nil),
		patch(trainer.ContainerPatch{Name: constants.Node}, &metav1.ObjectMeta{Labels: map[string]string{constants.LabelTrainJobAncestor: "x"}}),
	}
	seen := map[string]int{}
	for i, j := range distinct {
		k := key(j)
		if prev, ok := seen[k]; ok {
			t.Errorf("jobs %d and %d share the key %q", prev, i, k)
		}
		seen[k] = i
	}
	if _, err := LaunchKey(nil); err == nil {
		t.Error("nil TrainJob accepted")
	}
}

// TestLaunchKeyDecidesLaunch holds every recorded matrix (each trainer
// version's report, as embedded) to LaunchKey's claim: cases with the same
// key get the same launch verdict.
func TestLaunchKeyDecidesLaunch(t *testing.T) {
	reports, err := recordedReports()
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) < 2 {
		t.Fatalf("%d embedded matrix reports; want one per recorded trainer version", len(reports))
	}
	for _, r := range reports {
		byKey := map[string]Row{}
		shared := 0
		for _, row := range r.Rows {
			if row.LaunchKey == "" {
				continue
			}
			if row.Launch == nil {
				t.Errorf("trainer %s case %s: launch key without a launch verdict", r.TrainerVersion, row.Case)
				continue
			}
			first, ok := byKey[row.LaunchKey]
			if !ok {
				byKey[row.LaunchKey] = row
				continue
			}
			shared++
			if first.Launch.Judged != row.Launch.Judged || !slices.Equal(first.Launch.Problems, row.Launch.Problems) {
				t.Errorf("trainer %s: cases %s and %s share the launch key %q but not the verdict:\n%+v\n%+v",
					r.TrainerVersion, first.Case, row.Case, row.LaunchKey, *first.Launch, *row.Launch)
			}
		}
		if shared == 0 {
			t.Errorf("trainer %s: no two cases share a launch key, so nothing holds LaunchKey to its claim", r.TrainerVersion)
		}
	}
}
