package runtimes

import (
	"errors"
	"fmt"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainerconst "github.com/kubeflow/trainer/v2/pkg/constants"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

// FrameworkLabel tells the Kubeflow SDK which framework a runtime runs.
const FrameworkLabel = "trainer.kubeflow.org/framework"

// Profiles a runtime can ship, by name.
const (
	ProfileDefault = facts.ProfileDefault
	ProfileSimple  = facts.ProfileSimple
)

// Options are the cluster-specific inputs of the shipped runtime.
type Options struct {
	// Interfaces is required: without the GPU-NIC networks a pod gets only
	// eth0 and NCCL silently runs over TCP.
	Interfaces   interfaces.Mapping
	NodeSelector map[string]string // default: the A3 Mega accelerator label
	Tolerations  []corev1.Toleration
	WorkerImage  string // default: the BOM's worker image; must be pinned by digest
	Profile      string // default or simple; default: default
}

// Inputs are everything the builders read: the pins and the reviewed files.
type Inputs struct {
	// Facts are the TCPXO installer's facts; GIB the gIB installer's
	// (zero where a caller builds only TCPXO's artefacts).
	Facts     facts.Facts
	GIB       facts.Facts
	BOM       *bom.BOM
	Releases  *bom.Releases
	Overrides *bom.Overrides
}

// LoadInputs reads bom.yaml, releases.yaml and overrides.yaml under root,
// with the facts f (package shipped passes the compiled-in ones; the
// pipeline and bom-check pass the ones they extracted or parsed, so that
// nothing here links the generated package).
func LoadInputs(root string, f facts.Facts) (*Inputs, error) {
	at := func(rel string) string { return strings.TrimSuffix(root, "/") + "/" + rel }
	b, r, err := bom.LoadAll(at(bom.RepoPath), at(bom.ReleasesRepoPath))
	if err != nil {
		return nil, err
	}
	o, err := bom.LoadOverrides(at(bom.OverridesRepoPath))
	if err != nil {
		return nil, err
	}
	return &Inputs{Facts: f, BOM: b, Releases: r, Overrides: o}, nil
}

// WorkerEnv is the shipped worker env: the named generated profile with the
// reviewed overrides applied.
func (in *Inputs) WorkerEnv(profile string) ([]corev1.EnvVar, error) {
	prof, ok := in.Facts.Profile(profile)
	if !ok {
		return nil, fmt.Errorf("profile %q is not one of %s", profile, strings.Join(facts.Profiles, ", "))
	}
	var published []facts.EnvVar
	if cfg, ok := in.Releases.ConfigFor(in.Facts.PluginVersion); ok {
		published = cfg.EnvIn(in.Facts.LibDir)
	}
	env, err := in.Overrides.Apply(in.Facts.PluginVersion, prof, in.Facts.Normalized, published)
	if err != nil {
		return nil, fmt.Errorf("apply reviewed overrides to the %s profile of installer %s: %w", profile, in.Facts.PluginVersion, err)
	}
	// NCCL_LIB_DIR first: it is the profile's input, not one of its exports
	// (so no override carries it), and Google's README ("NCCL configs")
	// tells workloads to set it and `source ${NCCL_LIB_DIR}/nccl-env-profile.sh`;
	// without it that command fails. The value is the generated library dir,
	// the one the profiles were evaluated with.
	out := make([]corev1.EnvVar, 0, len(env)+1)
	out = append(out, corev1.EnvVar{Name: EnvLibDir, Value: in.Facts.LibDir})
	for _, v := range env {
		if v.Name == EnvLibDir {
			return nil, fmt.Errorf("bom/overrides.yaml sets %s, which tcpxogen derives from the generated library dir %s: remove that entry", EnvLibDir, in.Facts.LibDir)
		}
		out = append(out, corev1.EnvVar{Name: v.Name, Value: v.Value})
	}
	return out, nil
}

// EnvLibDir names the directory of the installed plugin, tuner, guest config
// and profile scripts inside a workload (the installer's profile requires it).
const EnvLibDir = "NCCL_LIB_DIR"

func (o *Options) defaults(in *Inputs) error {
	if o.Interfaces.IsZero() {
		return errors.New("the GPU-NIC network mapping is required (eth1=<network>,...,eth8=<network>): without it pods get only eth0 and NCCL silently falls back to TCP")
	}
	if o.NodeSelector == nil {
		o.NodeSelector = map[string]string{AcceleratorLabel: AcceleratorValue}
	}
	if err := checkAim(names.Runtime, fabric.TCPXO, fabric.TCPXO.MachineTypes, o.NodeSelector); err != nil {
		return err
	}
	if o.WorkerImage == "" {
		o.WorkerImage = in.BOM.Images.Worker.Reference
	}
	if _, err := bom.ParsePinned(o.WorkerImage); err != nil {
		return fmt.Errorf("worker image is not pinned by digest: %w", err)
	}
	if o.Profile == "" {
		o.Profile = ProfileDefault
	}
	return nil
}

// TorchRuntime builds torch-distributed-tcpxo. It fails closed: no mapping,
// an unknown profile or a stale override is an error, never a runtime
// without the wiring.
func TorchRuntime(in *Inputs, opts Options) (*trainer.ClusterTrainingRuntime, error) {
	if err := opts.defaults(in); err != nil {
		return nil, err
	}
	env, err := in.WorkerEnv(opts.Profile)
	if err != nil {
		return nil, err
	}
	node := corev1.Container{Name: NodeContainer, Image: opts.WorkerImage}
	WorkerWiring(&node, env)
	pod := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: PodAnnotations(opts.Interfaces)},
		Spec: corev1.PodSpec{
			NodeSelector:   opts.NodeSelector,
			Tolerations:    opts.Tolerations,
			InitContainers: []corev1.Container{DaemonSidecar(in.Facts)},
			Containers:     []corev1.Container{node},
			Volumes:        Volumes(),
		},
	}
	return torchRuntime(names.Runtime, pod), nil
}

// torchRuntime is a torch ClusterTrainingRuntime of two nodes whose one
// replicated job, node, runs pod: the skeleton every fabric's runtime
// shares, so only the pod (the wiring) differs between fabrics.
func torchRuntime(name string, pod corev1.PodTemplateSpec) *trainer.ClusterTrainingRuntime {
	return &trainer.ClusterTrainingRuntime{
		TypeMeta: metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.ClusterTrainingRuntimeKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{FrameworkLabel: "torch"},
		},
		Spec: trainer.TrainingRuntimeSpec{
			MLPolicy: &trainer.MLPolicy{
				NumNodes:       ptr.To[int32](2),
				MLPolicySource: trainer.MLPolicySource{Torch: &trainer.TorchMLPolicySource{}},
			},
			Template: trainer.JobSetTemplateSpec{Spec: jobsetv1alpha2.JobSetSpec{
				ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{
					Name: trainerconst.Node,
					Template: batchv1.JobTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{trainerconst.LabelTrainJobAncestor: trainerconst.AncestorTrainer}},
						Spec:       batchv1.JobSpec{Template: pod},
					},
				}},
			}},
		},
	}
}
