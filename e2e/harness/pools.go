package harness

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Pool is a GKE node pool of one machine type, beside the A3 Mega nodes
// the simulator registers at start: its nodes carry what GKE labels a node
// of the machine type with.
type Pool struct {
	// Name is the pool's cloud.google.com/gke-nodepool label and its
	// nodes' name prefix; unique among the pools.
	Name string
	// InstanceType and Accelerator are the node.kubernetes.io/instance-type
	// and cloud.google.com/gke-accelerator labels.
	InstanceType, Accelerator string
	// Nodes is how many nodes the pool has (at least 1).
	Nodes int
	// KubeletVersion is what the nodes' status reports, as GKE's kubelets
	// do (v1.33.5-gke.1200000); "" reports none.
	KubeletVersion string
	// Labels are further node labels (a managed DRANET pool's
	// cloud.google.com/gke-networking-dra-driver=true).
	Labels map[string]string
}

// InstanceTypeLabel is the label that names a node's machine type.
const InstanceTypeLabel = "node.kubernetes.io/instance-type"

// AddPool registers p's nodes (Ready, eight GPUs, as the A3 Mega ones) and
// returns their names. A pod binds to them only where its node selector and
// required node affinity allow, as on any node.
func (s *NodeSimulator) AddPool(ctx context.Context, p Pool) ([]string, error) {
	if p.Name == "" || p.Nodes < 1 {
		return nil, fmt.Errorf("pool %q: a pool needs a name and at least one node", p.Name)
	}
	s.mu.Lock()
	_, dup := s.pools[p.Name]
	s.mu.Unlock()
	if dup {
		return nil, fmt.Errorf("pool %q is already registered", p.Name)
	}
	var names []string
	for i := range p.Nodes {
		name := fmt.Sprintf("gke-%s-%d", p.Name, i)
		labels := map[string]string{
			AcceleratorLabel:         p.Accelerator,
			InstanceTypeLabel:        p.InstanceType,
			NodePoolLabel:            p.Name,
			"kubernetes.io/hostname": name,
		}
		maps.Copy(labels, p.Labels)
		if err := s.registerNode(ctx, name, labels, p.KubeletVersion); err != nil {
			return names, err
		}
		names = append(names, name)
		s.mu.Lock()
		s.pools[p.Name] = append(s.pools[p.Name], name)
		s.mu.Unlock()
	}
	return names, nil
}

// RemovePool deletes the nodes of the pool named name: from the simulator
// first, so no pod binds to them any more, then from the API server. Pods
// bound to them keep their node name, as after a node pool's deletion.
func (s *NodeSimulator) RemovePool(ctx context.Context, name string) error {
	s.mu.Lock()
	nodes := s.pools[name]
	delete(s.pools, name)
	for _, n := range nodes {
		delete(s.labels, n)
	}
	s.mu.Unlock()
	for _, n := range nodes {
		err := s.kube.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// allNodes lists every node a pod may bind to: the A3 Mega ones, then each
// pool's, pools in name order. Callers hold s.mu.
func (s *NodeSimulator) allNodes() []string {
	out := slices.Clone(s.nodes)
	for _, p := range slices.Sorted(maps.Keys(s.pools)) {
		out = append(out, s.pools[p]...)
	}
	return out
}

// fitting are the nodes of all that pod's node selector and required node
// affinity allow, decided by the scheduler's own helper (the NodeAffinity
// filter plugin's). Callers hold s.mu.
func (s *NodeSimulator) fitting(pod *corev1.Pod, all []string) []string {
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	var out []string
	for _, n := range all {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: s.labels[n]}}
		if ok, err := required.Match(node); ok && err == nil {
			out = append(out, n)
		}
	}
	return out
}

// unschedulable records on pod what the scheduler would: PodScheduled
// False, reason Unschedulable, with its message for a pod no node's labels
// admit. Written once; the pod stays Pending and is tried again each tick.
func (s *NodeSimulator) unschedulable(ctx context.Context, pod *corev1.Pod, nodes int) error {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return nil
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message:            fmt.Sprintf("0/%d nodes are available: %d node(s) didn't match Pod's node affinity/selector.", nodes, nodes),
		LastTransitionTime: metav1.Now(),
	})
	_, err := s.kube.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}
