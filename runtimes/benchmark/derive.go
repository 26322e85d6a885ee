package benchmark

import (
	"errors"
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

// Defaults of Params.
const (
	DefaultNumNodes int32 = 2
	// DefaultMinBytes and DefaultMaxBytes are the benchmark conventions'
	// message sizes (TCPXO's; a fabric may set its own largest size,
	// Fabric.MaxBytes); the measured value is the busbw at the largest.
	DefaultMinBytes = "1K"
	DefaultMaxBytes = "16G"
)

// The nccl-tests collectives a benchmark runs (the --collective values);
// each runs the MPI build of <collective>_perf.
const (
	AllReduce = "all_reduce"
	AllGather = "all_gather"
)

// Fabric is what deriving the benchmark needs to know about the fabric of
// the runtime it is derived from. Everything else (the MPI launcher, sshd,
// the copied wiring, the forwarded env) is the same for every fabric.
type Fabric struct {
	// Name is the fabric registry's name (internal/fabric).
	Name string
	// Short names the fabric where a message says what a one-node number
	// says nothing about.
	Short string
	// Benchmark is the default Params.Name.
	Benchmark string
	// ImageRole names the image the benchmark runs from by default, for
	// messages ("installer image").
	ImageRole string
	// Remedy says where a runtime fit to derive from comes from.
	Remedy string
	// Sidecar, when set, is the init container the node pod must carry as
	// a native sidecar: without it NCCL cannot use the GPU NICs.
	Sidecar string
	// NodeFirst requires the node container to be the pod's first
	// container: GKE gives RDMA device files only to the pod's first
	// non-init container.
	NodeFirst bool
	// RankPrelude, when set, is the program each rank runs through /bin/sh
	// before the perf binary (it ends by exec'ing it); "" runs the perf
	// binary directly.
	RankPrelude string
	// Collectives are the collectives the benchmark may run, the default
	// first.
	Collectives []string
	// MaxBytes is the default largest message size.
	MaxBytes string
}

// TCPXO is the benchmark of torch-distributed-tcpxo: all_reduce from the
// installer image, the tcpxo-daemon sidecar required, every rank raising
// its open-files limit first as Google's MPI entry does.
var TCPXO = Fabric{
	Name:        fabric.TCPXO.Name,
	Short:       "TCPXO",
	Benchmark:   names.Benchmark,
	ImageRole:   "installer image",
	Remedy:      "derive from " + names.Runtime + " as `tcpxogen render runtime` renders it or as deployed",
	Sidecar:     names.DaemonContainer,
	RankPrelude: RankPrelude,
	Collectives: []string{AllReduce},
	MaxBytes:    DefaultMaxBytes,
}

// GIB is the benchmark of a gIB runtime (torch-distributed-rdma-<machine
// type>): all_gather (Google's test, whose 2-node busbw Google publishes)
// or all_reduce, from the diagnostic image, up to 8G as Google's test runs
// (`run_nccl_tests.sh -t all_gather -b 1K -e 8G`), with the node container
// first. No rank prelude: the open-files limit is Google's TCPXO MPI
// entry's (FasTrak's sockets); the script gIB's test runs is not public,
// so nothing is added that no source shows.
var GIB = Fabric{
	Name:        fabric.GIB.Name,
	Short:       "gIB",
	Benchmark:   names.BenchmarkRDMA,
	ImageRole:   "diagnostic image",
	Remedy:      "derive from " + fabric.GIB.RuntimeFor("<machine type>") + " as `tcpxogen render runtime --fabric gib --machine-type <machine type>` renders it or as deployed",
	NodeFirst:   true,
	Collectives: []string{AllGather, AllReduce},
	MaxBytes:    "8G",
}

// Perf is the nccl-tests binary of collective c.
func Perf(c string) string { return c + "_perf" }

// Fixed parts of the derived runtime.
const (
	// SSHAuthMountPath is where the MPI plugin mounts the SSH key pair in
	// both launcher and node pods: root's, because the ranks run as root, as
	// the shipped torch workers do (IPC_LOCK is a root capability here).
	SSHAuthMountPath = "/root/.ssh"
	// FrameworkMPI is the trainer.kubeflow.org/framework label value: the
	// Kubeflow SDK lists only runtimes that carry the label.
	FrameworkMPI = "mpi"
	// AnnotationDerivedFrom records which runtime the benchmark was derived
	// from ("ClusterTrainingRuntime/<name>"), so a runtime found on a cluster
	// says what its number is evidence about.
	AnnotationDerivedFrom = "tcpxogen.dev/derived-from"
)

// Params are the benchmark's own inputs; everything else comes from the
// shipped runtime.
type Params struct {
	// Fabric is the shipped runtime's fabric; the zero value is TCPXO.
	Fabric Fabric
	// Namespace is required: a TrainingRuntime is namespaced, and only
	// TrainJobs in its namespace can reference it.
	Namespace string
	// Name defaults to Fabric.Benchmark.
	Name string
	// Image is required: an nccl-tests image with OpenMPI mpirun, sshd and
	// the collective's perf binary built with MPI=1, pinned as
	// repo:tag@sha256:<64 hex>. ParamsFor gives the pinned installer image,
	// which is the image Google runs TCPXO's nccl-tests from; GIBParamsFor
	// the pinned diagnostic image, gIB's. See the package documentation for
	// everything the image must provide.
	Image string
	// NumNodes defaults to DefaultNumNodes and must be at least 2: on one
	// node NCCL uses NVLink only and the number says nothing about the GPU
	// NICs.
	NumNodes int32
	// MinBytes and MaxBytes are nccl-tests sizes (a number with an optional
	// K, M or G suffix); they default to DefaultMinBytes and DefaultMaxBytes.
	MinBytes, MaxBytes string
	// Collective is the collective the benchmark runs, one of
	// Fabric.Collectives; it defaults to the first.
	Collective string
	// Perf is required: the absolute path of the MPI build of the
	// collective's perf binary in Image. Absolute because ranks start in
	// an ssh session, whose PATH is sshd's, not the image's.
	Perf string
	// SSHPort is required: the port the node pods' sshd listens on and the
	// launcher's ssh dials.
	SSHPort int
}

// ParamsFor returns the benchmark parameters read from the pinned
// installer image: the image itself (Google's samples run nccl-tests from
// it), its MPI build of all_reduce_perf and the port its sshd_config sets.
// The caller fills Namespace and may override the rest.
func ParamsFor(p facts.Facts) Params {
	return Params{Fabric: TCPXO, Image: p.InstallerImage, Collective: AllReduce, Perf: p.AllReducePerfMPI, SSHPort: p.SSHDPort}
}

// GIBParamsFor returns the benchmark parameters of the gIB runtime for
// machine type mt, read from the pinned diagnostic image (the image
// Google's NCCL test for A3 Ultra and A4 runs nccl-tests from): the image
// itself, its MPI build of collective's perf binary ("" for GIB's default,
// all_gather) and the port its sshd_config sets. The caller fills
// Namespace and may override the rest.
func GIBParamsFor(p facts.Facts, mt, collective string) Params {
	if collective == "" {
		collective = GIB.Collectives[0]
	}
	perf := map[string]string{AllGather: p.AllGatherPerfMPI, AllReduce: p.AllReducePerfMPI}[collective]
	return Params{Fabric: GIB, Name: fabric.GIB.BenchmarkFor(mt), Image: p.DiagnosticImage, Collective: collective, Perf: perf, SSHPort: p.SSHDPort}
}

// ErrParams is wrapped by every error about Params.
var ErrParams = errors.New("invalid benchmark parameters")

// ErrShipped is wrapped by every error about a shipped runtime the
// benchmark cannot be derived from faithfully.
var ErrShipped = errors.New("the shipped runtime cannot be benchmarked")

// sizeRE is the size syntax of all_reduce_perf's -b and -e: a byte count
// with an optional binary K, M or G suffix. Anything else is refused here
// rather than left to the binary's lenient parsing on a GPU node.
var sizeRE = regexp.MustCompile(`^([0-9]{1,15})([kKmMgG]?)$`)

// parseSize returns the size in bytes.
func parseSize(s string) (uint64, bool) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		return 0, false
	}
	shift := map[string]uint{"": 0, "k": 10, "m": 20, "g": 30}[strings.ToLower(m[2])]
	if n > math.MaxUint64>>shift {
		return 0, false
	}
	return n << shift, true
}

// withDefaults returns p with defaults applied, or every problem at once.
func (p Params) withDefaults() (Params, error) {
	if p.Fabric.Name == "" {
		p.Fabric = TCPXO
	}
	if p.Name == "" {
		p.Name = p.Fabric.Benchmark
	}
	if p.NumNodes == 0 {
		p.NumNodes = DefaultNumNodes
	}
	if p.MinBytes == "" {
		p.MinBytes = DefaultMinBytes
	}
	if p.MaxBytes == "" {
		p.MaxBytes = p.Fabric.MaxBytes
	}
	if p.Collective == "" && len(p.Fabric.Collectives) > 0 {
		p.Collective = p.Fabric.Collectives[0]
	}
	perf := Perf(p.Collective)

	var probs []string
	switch {
	case p.Namespace == "":
		probs = append(probs, "namespace is empty: a TrainingRuntime is namespaced; set it to the namespace the benchmark TrainJob runs in")
	default:
		if errs := validation.IsDNS1123Label(p.Namespace); len(errs) > 0 {
			probs = append(probs, fmt.Sprintf("namespace %q is not a valid namespace name: %s", p.Namespace, strings.Join(errs, "; ")))
		}
	}
	if errs := validation.IsDNS1123Subdomain(p.Name); len(errs) > 0 {
		probs = append(probs, fmt.Sprintf("name %q is not a valid object name: %s", p.Name, strings.Join(errs, "; ")))
	}
	if prob := imageProblem(p.Image, perf, p.Fabric.ImageRole); prob != "" {
		probs = append(probs, prob)
	}
	if p.NumNodes < 2 {
		probs = append(probs, fmt.Sprintf("numNodes %d: the benchmark needs at least 2 nodes; on one node NCCL never touches the GPU NICs, so its number says nothing about %s", p.NumNodes, p.Fabric.Short))
	}
	knownCollective := slices.Contains(p.Fabric.Collectives, p.Collective)
	if !knownCollective {
		probs = append(probs, fmt.Sprintf("collective %q: the %s benchmark runs %s", p.Collective, p.Fabric.Short, strings.Join(p.Fabric.Collectives, " or ")))
	}
	minB, okMin := parseSize(p.MinBytes)
	maxB, okMax := parseSize(p.MaxBytes)
	if !okMin {
		probs = append(probs, fmt.Sprintf("minBytes %q is not an nccl-tests size: use a number with an optional K, M or G suffix, e.g. %s", p.MinBytes, DefaultMinBytes))
	}
	if !okMax {
		probs = append(probs, fmt.Sprintf("maxBytes %q is not an nccl-tests size: use a number with an optional K, M or G suffix, e.g. %s", p.MaxBytes, DefaultMaxBytes))
	}
	if okMin && okMax {
		switch {
		case minB == 0:
			probs = append(probs, fmt.Sprintf("minBytes %q is zero: %s needs a positive size", p.MinBytes, perf))
		case minB > maxB:
			probs = append(probs, fmt.Sprintf("minBytes %s is larger than maxBytes %s", p.MinBytes, p.MaxBytes))
		}
	}
	if p.SSHPort < 1 || p.SSHPort > 65535 {
		probs = append(probs, fmt.Sprintf("sshPort %d is not a port: give the port the image's sshd listens on (the %s's is in its sshd_config)", p.SSHPort, p.Fabric.ImageRole))
	}
	switch base := path.Base(p.Perf); {
	case !knownCollective:
		// Said above; no binary to judge.
	case !path.IsAbs(p.Perf) || path.Clean(p.Perf) != p.Perf:
		probs = append(probs, fmt.Sprintf("%s %q is not a clean absolute path: ranks start in an ssh session whose PATH is not the image's; give the binary's full path in the image", perf, p.Perf))
	case base != perf && base != perf+"_mpi":
		probs = append(probs, fmt.Sprintf("%s %q is another binary: the benchmark runs %s, built with MPI=1", perf, p.Perf, perf))
	}
	if len(probs) > 0 {
		return Params{}, fmt.Errorf("%w: %s", ErrParams, strings.Join(probs, "; "))
	}
	return p, nil
}

// imageProblem describes why ref is not an image pinned as
// repo:tag@sha256:<64 hex>, or returns "". The BOM's rule decides, so the
// benchmark image is held to what every shipped image is.
func imageProblem(ref, perf, role string) string {
	if strings.TrimSpace(ref) == "" {
		return fmt.Sprintf("image is empty: give the nccl-tests image (mpirun, sshd and %s) pinned as repo:tag@sha256:<64 hex>, or start from the pinned %s", perf, role)
	}
	if _, err := bom.ParsePinned(ref); err != nil {
		return fmt.Sprintf("image is not pinned by digest: %v", err)
	}
	return ""
}

// shippedNode is what the derivation reads from the shipped runtime.
type shippedNode struct {
	pod       *corev1.PodTemplateSpec // inside the shipped object: read only
	container *corev1.Container       // the node container, inside pod
	gpus      int32
}

// inspectShipped finds the node pod and checks everything the benchmark
// of fab relies on, failing closed with what is missing and how to get it.
func inspectShipped(shipped *trainer.ClusterTrainingRuntime, fab Fabric) (shippedNode, error) {
	if shipped == nil {
		return shippedNode{}, fmt.Errorf("%w: the shipped runtime is nil", ErrShipped)
	}
	fail := func(format string, args ...any) (shippedNode, error) {
		return shippedNode{}, fmt.Errorf("%w: ClusterTrainingRuntime %q: %s; %s",
			ErrShipped, shipped.Name, fmt.Sprintf(format, args...), fab.Remedy)
	}
	var pod *corev1.PodTemplateSpec
	for i := range shipped.Spec.Template.Spec.ReplicatedJobs {
		if rj := &shipped.Spec.Template.Spec.ReplicatedJobs[i]; rj.Name == constants.Node {
			pod = &rj.Template.Spec.Template
			break
		}
	}
	if pod == nil {
		return fail("it has no replicated job %q, whose pod template is the wiring to copy", constants.Node)
	}
	var node *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == runtimes.NodeContainer {
			node = &pod.Spec.Containers[i]
			break
		}
	}
	if node == nil {
		return fail("its %s job has no container %q", constants.Node, runtimes.NodeContainer)
	}
	if fab.NodeFirst && pod.Spec.Containers[0].Name != runtimes.NodeContainer {
		return fail("its %s pod's first container is %q, not %q: GKE gives the RDMA device files only to the pod's first non-init container, so the ranks would have no RDMA NIC", constants.Node, pod.Spec.Containers[0].Name, runtimes.NodeContainer)
	}

	q, ok := node.Resources.Limits[runtimes.GPUResource]
	if !ok {
		return fail("the %s container has no %s limit, so there is no GPU count to run one rank per GPU on", runtimes.NodeContainer, runtimes.GPUResource)
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 || n > math.MaxInt32 {
		return fail("the %s container's %s limit %s is not a positive whole number of GPUs", runtimes.NodeContainer, runtimes.GPUResource, q.String())
	}

	if fab.Sidecar != "" {
		var daemon *corev1.Container
		for i := range pod.Spec.InitContainers {
			if pod.Spec.InitContainers[i].Name == fab.Sidecar {
				daemon = &pod.Spec.InitContainers[i]
				break
			}
		}
		switch {
		case daemon == nil:
			return fail("its %s pod has no %s sidecar; without the daemon NCCL cannot use the GPU NICs and the benchmark would measure TCP", constants.Node, fab.Sidecar)
		case ptr.Deref(daemon.RestartPolicy, "") != corev1.ContainerRestartPolicyAlways:
			return fail("its %s init container is not a native sidecar (restartPolicy: Always): as a plain init container it never completes and the pod never starts", fab.Sidecar)
		}
	}

	if len(node.EnvFrom) > 0 {
		return fail("the %s container uses envFrom: the launcher forwards variables to the ranks by name and cannot see those names; list the variables in env", runtimes.NodeContainer)
	}
	for i := range node.Env {
		e := &node.Env[i]
		if !forwarded(e.Name) || e.ValueFrom == nil {
			continue
		}
		if e.ValueFrom.FieldRef != nil || e.ValueFrom.ResourceFieldRef != nil {
			return fail("the %s container's %s comes from a field of its own pod, which the launcher would resolve in the launcher pod and forward to the ranks with the wrong value", runtimes.NodeContainer, e.Name)
		}
	}
	if err := rootProblem(pod, node); err != "" {
		return fail("%s", err)
	}
	return shippedNode{pod: pod, container: node, gpus: int32(n)}, nil
}

// rootProblem says why the node pod cannot run sshd and the ranks as root,
// or returns "". The container's settings override the pod's.
func rootProblem(pod *corev1.PodTemplateSpec, c *corev1.Container) string {
	var user *int64
	var nonRoot *bool
	if sc := pod.Spec.SecurityContext; sc != nil {
		user, nonRoot = sc.RunAsUser, sc.RunAsNonRoot
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			user = sc.RunAsUser
		}
		if sc.RunAsNonRoot != nil {
			nonRoot = sc.RunAsNonRoot
		}
	}
	switch {
	case user != nil && *user != 0:
		return fmt.Sprintf("the %s container runs as user %d, but the benchmark's sshd and ranks run as root (SSH keys at %s)", runtimes.NodeContainer, *user, SSHAuthMountPath)
	case ptr.Deref(nonRoot, false):
		return fmt.Sprintf("the %s container sets runAsNonRoot, but the benchmark's sshd and ranks run as root (SSH keys at %s)", runtimes.NodeContainer, SSHAuthMountPath)
	}
	return ""
}

// forwarded reports whether the launcher forwards a worker variable to the
// ranks: everything that configures NCCL, its plugin and CUDA, and the
// library path that makes ranks load the installer's NCCL.
func forwarded(name string) bool {
	return strings.HasPrefix(name, "NCCL_") || strings.HasPrefix(name, "CUDA_") || name == "LD_LIBRARY_PATH"
}

// forwardedNames are the names of env that the launcher forwards, sorted
// and without duplicates (Kubernetes lets the last of a name win; mpirun
// needs it once).
func forwardedNames(env []corev1.EnvVar) []string {
	var names []string
	for _, e := range env {
		if forwarded(e.Name) {
			names = append(names, e.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Derive returns the NCCL benchmark runtime for shipped: a namespaced MPI
// TrainingRuntime whose node pod is a copy of shipped's node pod, and whose
// launcher is the benchmark's own. shipped is not modified and shares
// nothing with the result. It fails closed, wrapping ErrParams or
// ErrShipped, when p is invalid or shipped lacks anything the benchmark
// must copy; see the package documentation for the rules.
func Derive(shipped *trainer.ClusterTrainingRuntime, p Params) (*trainer.TrainingRuntime, error) {
	p, err := p.withDefaults()
	if err != nil {
		return nil, err
	}
	src, err := inspectShipped(shipped, p.Fabric)
	if err != nil {
		return nil, err
	}

	nodePod := src.pod.DeepCopy()
	for i := range nodePod.Spec.Containers {
		if nodePod.Spec.Containers[i].Name == runtimes.NodeContainer {
			ownNodeContainer(&nodePod.Spec.Containers[i], p.Image, p.SSHPort)
		}
	}

	return &trainer.TrainingRuntime{
		TypeMeta: metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainingRuntimeKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:        p.Name,
			Namespace:   p.Namespace,
			Labels:      map[string]string{runtimes.FrameworkLabel: FrameworkMPI},
			Annotations: map[string]string{AnnotationDerivedFrom: trainer.ClusterTrainingRuntimeKind + "/" + shipped.Name},
		},
		Spec: trainer.TrainingRuntimeSpec{
			MLPolicy: &trainer.MLPolicy{
				NumNodes: ptr.To(p.NumNodes),
				MLPolicySource: trainer.MLPolicySource{MPI: &trainer.MPIMLPolicySource{
					// Hostfile slots: one rank per GPU of the copied limit.
					NumProcPerNode:    ptr.To(src.gpus),
					MPIImplementation: ptr.To(trainer.MPIImplementationOpenMPI),
					SSHAuthMountPath:  ptr.To(SSHAuthMountPath),
					// The launcher has no GPUs and must not be a rank.
					RunLauncherAsNode: ptr.To(false),
				}},
			},
			Template: trainer.JobSetTemplateSpec{Spec: jobsetv1alpha2.JobSetSpec{
				// sshd never exits: the benchmark is done when mpirun is.
				SuccessPolicy: &jobsetv1alpha2.SuccessPolicy{
					Operator:             jobsetv1alpha2.OperatorAll,
					TargetReplicatedJobs: []string{constants.Launcher},
				},
				ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{
					{
						// First, because JobSet's dependsOn may only point
						// at an earlier replicated job. It is the trainer
						// step: numNodes sizes it, and the MPI plugin lists
						// its pods in the hostfile. Labelling the launcher
						// instead would make numNodes size the launcher.
						Name: constants.Node,
						Template: batchv1.JobTemplateSpec{
							ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{constants.LabelTrainJobAncestor: constants.AncestorTrainer}},
							Spec:       batchv1.JobSpec{Template: *nodePod},
						},
					},
					{
						Name: constants.Launcher,
						// Ready: every node pod's sshd accepts connections,
						// which is after the daemon sidecar has started.
						DependsOn: []jobsetv1alpha2.DependsOn{{Name: constants.Node, Status: jobsetv1alpha2.DependencyReady}},
						Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
							// One run is one measurement: a retried launcher
							// would mix logs of several runs, and whether to
							// retry is the validator's decision.
							BackoffLimit: ptr.To[int32](0),
							Template:     launcherPod(p, src.container.Env),
						}},
					},
				},
			}},
		},
	}, nil
}

// Shell preludes. Each ends in `exec "$0" "$@"`, so the program's argv stays
// a structured list in the container's args (no quoting) and the program
// replaces the shell as PID 1, receiving signals directly.
const (
	// launcherKeyDir holds a 0600 copy of the MPI private key: OpenSSH
	// ignores the mounted one, whose mode is the Secret default 0644.
	launcherKeyDir = "/tmp/mpi-ssh"

	execArgv = `exec "$0" "$@"`
)

// RankOpenFiles is the open-files limit every rank raises itself to, as
// Google's MPI entry does (`ulimit -n 1048576` in the installer image's
// /scripts/demo_mpi_entry_with_config_profile.sh, which Google's
// nccl-test.yaml runs in every rank): the FasTrak plugin holds sockets per
// GPU NIC and flow, more than a container's default soft limit may allow.
const RankOpenFiles = 1048576

// RankPrelude is the program each TCPXO rank runs before all_reduce_perf. Like
// Google's entry (bash without -e) it does not stop the rank when the hard
// limit is lower; it says so on the rank's stderr, which mpirun copies into
// the launcher log, and raises the soft limit as far as the hard one goes.
var RankPrelude = "ulimit -n " + strconv.Itoa(RankOpenFiles) + ` 2>/dev/null || { echo "tcpxogen: this rank's open-files hard limit is $(ulimit -Hn), below the ` +
	strconv.Itoa(RankOpenFiles) + ` Google's MPI entry sets: raise the container runtime's nofile limit if NCCL fails with Too many open files" >&2; ulimit -n "$(ulimit -Hn)"; }; ` + execArgv

func launcherPrelude() string {
	return strings.Join([]string{
		"set -eu",
		"umask 077",
		"mkdir -p " + launcherKeyDir,
		"cp " + path.Join(SSHAuthMountPath, constants.MPISSHPrivateKeyFile) + " " + launcherKeyFile(),
		execArgv,
	}, "; ")
}

func launcherKeyFile() string { return path.Join(launcherKeyDir, constants.MPISSHPrivateKeyFile) }

// nodePrelude creates what sshd needs and images that merely install
// openssh-server lack: the privilege-separation directory and host keys.
func nodePrelude() string {
	return strings.Join([]string{"set -eu", "mkdir -p /run/sshd", "ssh-keygen -A", execArgv}, "; ")
}

// sshdArgv runs sshd in the foreground (-D) logging to stderr (-e) on the
// port the launcher dials; -p repeats the image's configured port so an
// override image cannot silently listen elsewhere. Strict modes are off
// because the key Secret's mount point is group/world writable, for which
// sshd would refuse authorized_keys.
func sshdArgv(port int) []string {
	return []string{"/usr/sbin/sshd", "-De", "-p", strconv.Itoa(port), "-o", "StrictModes=no"}
}

// rshArgs are the ssh options mpirun uses to start its daemons. On the
// command line they replace the MPI plugin's OMPI_MCA_plm_rsh_args, so the
// plugin's value comes first.
func rshArgs(port int) string {
	return strings.Join([]string{
		constants.OpenMPIEnvDefaultValueRSHArgs,
		"-p", strconv.Itoa(port),
		"-i", launcherKeyFile(),
		"-o", "StrictHostKeyChecking=no",
		"-o", "UserKnownHostsFile=/dev/null",
	}, " ")
}

// mpirunArgv is the launcher's program: mpirun and the collective's perf
// binary. No -np: mpirun starts one rank per hostfile slot, numProcPerNode
// on each node, on however many nodes the TrainJob asks for.
//
// For gIB, Google's test runs `/usr/local/gib/scripts/run_nccl_tests.sh -t
// all_gather -b 1K -e 8G host1 host2` from the installed payload; the
// benchmark runs mpirun and the perf binary itself, as TCPXO's does: that
// script is not public (what it sets and runs cannot be reviewed), it
// sources set_nccl_env.sh from the node at run time where the benchmark
// must measure the env the runtime ships (the -x values WiringEqual holds
// to the shipped worker env), and it takes host names where the trainer's
// MPI plugin writes the hostfile and the ssh keys.
func mpirunArgv(p Params, names []string) []string {
	eth0 := interfaces.DefaultInterface
	argv := []string{
		"mpirun",
		"--allow-run-as-root", // ranks run as root, as the shipped workers do
		"--bind-to", "none",   // NCCL picks its CPUs; MPI binding would fight it
		// MPI only bootstraps, over eth0: the launcher has no GPU NICs.
		"--mca", "pml", "ob1",
		"--mca", "btl", "tcp,self",
		"--mca", "btl_tcp_if_include", eth0,
		"--mca", "oob_tcp_if_include", eth0,
		"--mca", "plm_rsh_args", rshArgs(p.SSHPort),
	}
	for _, n := range names {
		argv = append(argv, "-x", n)
	}
	// A TCPXO rank starts through the shell so it can raise its open-files
	// limit first, as Google's MPI entry does in every rank.
	if p.Fabric.RankPrelude != "" {
		argv = append(argv, "/bin/sh", "-c", p.Fabric.RankPrelude)
	}
	return append(argv, p.Perf,
		"-b", p.MinBytes,
		"-e", p.MaxBytes,
		"-f", "2", // double the size each step
		"-g", "1", // one GPU per rank: one rank per GPU
	)
}

// launcherPod is the benchmark's own launcher pod. Its container is named
// "node" because the MPI plugin mounts the hostfile and SSH keys, and sets
// the OpenMPI env, only in containers of that name. It requests no GPUs and
// carries no multi-network or NRI annotation: it is not a rank and must not
// take a GPU node's NICs or devices.
func launcherPod(p Params, workerEnv []corev1.EnvVar) corev1.PodTemplateSpec {
	env := make([]corev1.EnvVar, len(workerEnv))
	for i := range workerEnv {
		workerEnv[i].DeepCopyInto(&env[i])
	}
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		// A failed mpirun is a failed run, with its pod and log kept.
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{
			Name:    constants.Node,
			Image:   p.Image,
			Command: []string{"/bin/sh", "-c", launcherPrelude()},
			Args:    mpirunArgv(p, forwardedNames(workerEnv)),
			// The whole worker env, in order, so $(VAR) references expand
			// exactly as in the worker; -x NAME forwards from here.
			Env: env,
		}},
	}}
}

// clearOwned zeroes the node container fields the benchmark owns: what it
// runs and how that is probed. Everything else is wiring and is copied.
func clearOwned(c *corev1.Container) {
	c.Image = ""
	c.Command, c.Args, c.WorkingDir = nil, nil, ""
	c.Ports = nil
	c.ReadinessProbe, c.LivenessProbe, c.StartupProbe = nil, nil, nil
	c.Lifecycle = nil
}

// ownNodeContainer turns a copy of the shipped node container into the
// benchmark's sshd container.
func ownNodeContainer(c *corev1.Container, image string, port int) {
	clearOwned(c)
	c.Image = image
	c.Command = []string{"/bin/sh", "-c", nodePrelude()}
	c.Args = sshdArgv(port)
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(port)}},
		PeriodSeconds: 5,
	}
}
