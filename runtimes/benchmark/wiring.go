package benchmark

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/tcpxogen/tcpxogen/internal/structdiff"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes"
)

// WiringEqual compares the benchmark runtime bench with the shipped runtime
// it should have been derived from, structurally, and returns one
// human-readable line per difference; empty means bench measures exactly
// the shipped wiring. It is what the coupling check runs.
//
// It compares, in this order:
//
//   - the node pod's wiring, with wiring.Diff (annotations, init containers
//     such as the tcpxo-daemon sidecar, volumes, nodeSelector, required node
//     affinity, the node container's position, env, mounts, added
//     capabilities and resources);
//   - the rest of the node pod template (tolerations, labels, the rest of
//     the affinity and securityContext, other containers, ...),
//     field by field, except the node container fields the benchmark owns
//     (image, command, args, workingDir, ports, probes, lifecycle);
//   - what reaches the ranks: mlPolicy.mpi.numProcPerNode must equal the
//     shipped GPU limit (one rank per GPU), and the launcher must forward
//     with -x every NCCL_*, CUDA_* and LD_LIBRARY_PATH variable of the
//     shipped worker env, with the shipped value, and nothing else of that
//     kind.
func WiringEqual(shipped *trainer.ClusterTrainingRuntime, bench *trainer.TrainingRuntime) []string {
	if shipped == nil || bench == nil {
		return []string{"cannot compare: the shipped or the benchmark runtime is nil"}
	}
	var out []string
	sp, err := wiring.RuntimePodTemplate(shipped, constants.Node)
	if err != nil {
		out = append(out, "shipped runtime: "+err.Error())
	}
	bp, err := wiring.RuntimePodTemplate(bench, constants.Node)
	if err != nil {
		out = append(out, "benchmark runtime: "+err.Error())
	}
	if len(out) > 0 {
		return out
	}

	sw := wiring.Of(sp, runtimes.NodeContainer)
	for _, c := range wiring.Diff(sw, wiring.Of(bp, runtimes.NodeContainer)) {
		out = append(out, "benchmark node pod: "+c.String())
	}
	out = append(out, podRemainderDiff(sp, bp)...)
	out = append(out, rankDiffs(sw, bench)...)
	return out
}

// remainder is a pod template without what wiring.Diff compares and without
// what the benchmark owns, as generic JSON: what is left must be equal.
func remainder(p *corev1.PodTemplateSpec) (any, error) {
	c := p.DeepCopy()
	c.Annotations = nil
	c.Spec.InitContainers = nil
	c.Spec.Volumes = nil
	c.Spec.NodeSelector = nil
	if a := c.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = nil
		if len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
			a.NodeAffinity = nil
		}
		if *a == (corev1.Affinity{}) {
			c.Spec.Affinity = nil
		}
	}
	for i := range c.Spec.Containers {
		n := &c.Spec.Containers[i]
		if n.Name != runtimes.NodeContainer {
			continue
		}
		clearOwned(n)
		n.Env, n.VolumeMounts, n.Resources = nil, nil, corev1.ResourceRequirements{}
		if sc := n.SecurityContext; sc != nil {
			if sc.Capabilities != nil {
				sc.Capabilities.Add = nil
				if len(sc.Capabilities.Drop) == 0 {
					sc.Capabilities = nil
				}
			}
			if *sc == (corev1.SecurityContext{}) {
				n.SecurityContext = nil
			}
		}
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	var v any
	return v, json.Unmarshal(raw, &v)
}

func podRemainderDiff(shipped, bench *corev1.PodTemplateSpec) []string {
	a, errA := remainder(shipped)
	b, errB := remainder(bench)
	if err := cmp.Or(errA, errB); err != nil {
		// API types always encode; say so rather than report equality.
		return []string{fmt.Sprintf("cannot compare the node pod templates: %v", err)}
	}
	var out []string
	for _, d := range structdiff.Values("", a, b) {
		out = append(out, "benchmark node pod: "+strings.TrimPrefix(d.Format("shipped", "benchmark"), "."))
	}
	return out
}

// rankDiffs checks what the ranks get beyond the pod spec: their number per
// node and their environment, which reaches them only through the launcher.
func rankDiffs(sw wiring.Wiring, bench *trainer.TrainingRuntime) []string {
	var out []string
	var mpi *trainer.MPIMLPolicySource
	if bench.Spec.MLPolicy != nil {
		mpi = bench.Spec.MLPolicy.MPI
	}
	switch q, ok := sw.NodeResources.Limits[runtimes.GPUResource]; {
	case mpi == nil:
		out = append(out, "benchmark runtime has no mlPolicy.mpi: it cannot run one rank per GPU")
	case !ok:
		out = append(out, fmt.Sprintf("shipped node container has no %s limit to run one rank per GPU on", runtimes.GPUResource))
	case mpi.NumProcPerNode == nil || int64(*mpi.NumProcPerNode) != q.Value():
		out = append(out, fmt.Sprintf("benchmark mlPolicy.mpi.numProcPerNode is %s, but the shipped node has %s GPUs: one rank per GPU needs them equal",
			renderInt(mpi.NumProcPerNode), q.String()))
	}

	lc, err := launcherContainer(bench)
	if err != nil {
		return append(out, "benchmark launcher: "+err.Error())
	}
	fwd := xNames(append(slices.Clone(lc.Command), lc.Args...))
	want := forwardedNames(sw.NodeEnv)
	shippedVal := envValues(sw.NodeEnv)
	launcherVal := envValues(lc.Env)
	for _, n := range want {
		v, isFwd := fwd[n]
		switch {
		case !isFwd:
			out = append(out, fmt.Sprintf("benchmark launcher does not forward %s to the ranks (no -x %s): ranks would run without the shipped value %q", n, n, shippedVal[n]))
			continue
		case v == nil:
			// -x NAME forwards the launcher's own value.
			lv, set := launcherVal[n]
			if !set {
				out = append(out, fmt.Sprintf("benchmark launcher forwards %s but does not set it: ranks would get no value, the shipped worker has %q", n, shippedVal[n]))
			} else if lv != shippedVal[n] {
				out = append(out, fmt.Sprintf("benchmark launcher forwards %s=%q, the shipped worker has %q", n, lv, shippedVal[n]))
			}
		case *v != shippedVal[n]:
			out = append(out, fmt.Sprintf("benchmark launcher forwards %s=%q, the shipped worker has %q", n, *v, shippedVal[n]))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(fwd)) {
		if _, ok := shippedVal[n]; !ok && forwarded(n) {
			out = append(out, fmt.Sprintf("benchmark launcher forwards %s, which the shipped worker env does not set", n))
		}
	}
	return out
}

func renderInt(p *int32) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// launcherContainer is the mpirun container of the launcher job.
func launcherContainer(rt *trainer.TrainingRuntime) (*corev1.Container, error) {
	pod, err := wiring.RuntimePodTemplate(rt, constants.Launcher)
	if err != nil {
		return nil, err
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == constants.Node {
			return &pod.Spec.Containers[i], nil
		}
	}
	return nil, fmt.Errorf("no container %q (the MPI plugin wires only containers of that name)", constants.Node)
}

// xNames reads mpirun's -x options from argv: NAME forwards the launcher's
// value (nil), NAME=VALUE sets one.
func xNames(argv []string) map[string]*string {
	out := map[string]*string{}
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] != "-x" {
			continue
		}
		i++
		if name, val, ok := strings.Cut(argv[i], "="); ok {
			out[name] = ptr.To(val)
		} else {
			out[name] = nil
		}
	}
	return out
}

// envValues maps names to rendered values; the last of a name wins, as in
// Kubernetes.
func envValues(env []corev1.EnvVar) map[string]string {
	m := make(map[string]string, len(env))
	for i := range env {
		m[env[i].Name] = wiring.EnvValue(&env[i])
	}
	return m
}
