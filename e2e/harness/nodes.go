package harness

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Outcome is what the simulated kubelet does with a pod.
type Outcome int

const (
	// Succeed runs the pod, then ends it Succeeded (every container exit 0).
	Succeed Outcome = iota
	// Fail runs the pod, then ends it Failed (the node container exits 1).
	// A real kubelet would restart an OnFailure container; the simulator
	// fails the pod, as it does for restartPolicy Never.
	Fail
	// NeverStart leaves the pod Pending, unbound: what an unschedulable
	// pod or a missing image looks like from the API.
	NeverStart
	// KeepRunning runs the pod and never ends it (a hung rank).
	KeepRunning
)

// Plan is a namespace's scenario for the simulated kubelets.
type Plan struct {
	// Hold keeps started pods Running until Release, so a scenario can look
	// at running pods (the sidecar started, the wiring as admitted).
	Hold bool
	// Outcome decides each pod's end; nil means Succeed for every pod.
	Outcome func(*corev1.Pod) Outcome
	// RunFor is how long a pod runs at least before it ends (a benchmark
	// takes minutes; zero ends it at the next tick).
	RunFor time.Duration
	// Log is what a container of a pod logged, served through the API
	// server's pods/log as a kubelet would; nil serves empty logs.
	Log func(pod *corev1.Pod, container string) string
}

// Simulated GPU node identity: what GKE puts on an A3 Mega node.
const (
	AcceleratorLabel = "cloud.google.com/gke-accelerator"
	Accelerator      = "nvidia-h100-mega-80gb"
	InstanceType     = "a3-megagpu-8g"
	NodePoolLabel    = "cloud.google.com/gke-nodepool"
	NodePool         = "a3-mega"
)

// NodeSimulator stands in for the kubelets: there is no scheduler, so it
// binds pending pods to its nodes round robin, and moves them to Running
// (every container started, native sidecars started and ready) and then to
// Succeeded or Failed as the namespace's Plan says.
type NodeSimulator struct {
	kube kubernetes.Interface

	mu       sync.Mutex
	plans    map[string]Plan
	released map[string]bool
	// nodes are the A3 Mega nodes registered at start (NodeNames); pools
	// the nodes of pools added since, by pool (AddPool); labels every
	// node's labels, which decide where a pod may bind (bind).
	nodes  []string
	pools  map[string][]string
	labels map[string]map[string]string
	next   int
	podIP  int

	// kubeletPort is the loopback port of the log server, which answers
	// the kubelet's /containerLogs/{namespace}/{pod}/{container}.
	kubeletPort int32
}

// serveLogs starts the simulated kubelets' log endpoint over TLS (the API
// server verifies no kubelet certificate unless it is given a CA) and
// returns its stop function.
func (s *NodeSimulator) serveLogs() (func(), error) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
		if !strings.HasPrefix(r.URL.Path, "/containerLogs/") || len(parts) != 3 {
			http.NotFound(w, r)
			return
		}
		ns, name, container := parts[0], parts[1], parts[2]
		pod, err := s.kube.CoreV1().Pods(ns).Get(r.Context(), name, metav1.GetOptions{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		s.mu.Lock()
		plan := s.plans[ns]
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		if plan.Log != nil {
			_, _ = io.WriteString(w, plan.Log(pod, container))
		}
	}))
	srv.StartTLS()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		srv.Close()
		return nil, err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		srv.Close()
		return nil, err
	}
	s.kubeletPort = int32(p)
	return srv.Close, nil
}

func newNodeSimulator(kube kubernetes.Interface) *NodeSimulator {
	return &NodeSimulator{kube: kube, plans: map[string]Plan{}, released: map[string]bool{}, pools: map[string][]string{}, labels: map[string]map[string]string{}}
}

// SetPlan sets the scenario for pods in namespace ns.
func (s *NodeSimulator) SetPlan(ns string, p Plan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.plans[ns] = p
	delete(s.released, ns)
}

// Release lets held pods of ns finish.
func (s *NodeSimulator) Release(ns string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.released[ns] = true
}

// NodeNames returns the A3 Mega nodes registered at start; the nodes of
// pools added later (AddPool) are not among them.
func (s *NodeSimulator) NodeNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.nodes...)
}

func (s *NodeSimulator) registerNodes(ctx context.Context, n int) error {
	for i := range n {
		name := fmt.Sprintf("gke-a3-mega-%d", i)
		if err := s.registerNode(ctx, name, map[string]string{
			AcceleratorLabel:         Accelerator,
			InstanceTypeLabel:        InstanceType,
			NodePoolLabel:            NodePool,
			"kubernetes.io/hostname": name,
		}, ""); err != nil {
			return err
		}
		s.mu.Lock()
		s.nodes = append(s.nodes, name)
		s.mu.Unlock()
	}
	return nil
}

// registerNode creates a Ready GPU node with labels and the kubelet version
// kubelet ("" for none), its kubelet endpoint the simulator's log server,
// and records its labels for bind.
func (s *NodeSimulator) registerNode(ctx context.Context, name string, labels map[string]string, kubelet string) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	created, err := s.kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("208"),
		corev1.ResourceMemory: resource.MustParse("1872Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
		"nvidia.com/gpu":      resource.MustParse("8"),
	}
	created.Status = corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}},
		// The API server reaches the kubelet here for pod logs: every
		// simulated node's is the simulator's log server (serveLogs).
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: s.kubeletPort}},
		NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: kubelet},
	}
	if _, err := s.kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.labels[name] = maps.Clone(labels)
	return nil
}

// run steps every pod every 100 ms until ctx ends. One step per pod and
// tick (bind, start, end), so every intermediate state is visible to the
// controllers' watches, as on a cluster.
func (s *NodeSimulator) run(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pods, err := s.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			continue // the API server is shutting down, or a transient error: next tick
		}
		for i := range pods.Items {
			// Conflicts and races with the controllers are retried on the
			// next tick, as a kubelet would.
			_ = s.step(ctx, &pods.Items[i])
		}
	}
}

func (s *NodeSimulator) step(ctx context.Context, pod *corev1.Pod) error {
	if pod.DeletionTimestamp != nil {
		// Nothing runs it any more: finish the graceful deletion the way a
		// kubelet confirms it, or the pod lingers forever.
		err := s.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	s.mu.Lock()
	plan := s.plans[pod.Namespace]
	released := s.released[pod.Namespace]
	s.mu.Unlock()
	outcome := Succeed
	if plan.Outcome != nil {
		outcome = plan.Outcome(pod)
	}
	switch {
	case outcome == NeverStart:
		return nil
	case pod.Spec.NodeName == "":
		return s.bind(ctx, pod)
	case pod.Status.Phase != corev1.PodRunning:
		return s.start(ctx, pod)
	case outcome == KeepRunning, plan.Hold && !released:
		return nil
	case pod.Status.StartTime != nil && time.Since(pod.Status.StartTime.Time) < plan.RunFor:
		return nil
	default:
		return s.finish(ctx, pod, outcome)
	}
}

func (s *NodeSimulator) bind(ctx context.Context, pod *corev1.Pod) error {
	s.mu.Lock()
	all := s.allNodes()
	if len(all) == 0 {
		s.mu.Unlock()
		return nil
	}
	fits := s.fitting(pod, all)
	if len(fits) == 0 {
		s.mu.Unlock()
		return s.unschedulable(ctx, pod, len(all))
	}
	node := fits[s.next%len(fits)]
	s.next++
	s.mu.Unlock()
	return s.kube.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
}

func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func (s *NodeSimulator) start(ctx context.Context, pod *corev1.Pod) error {
	now := metav1.Now()
	s.mu.Lock()
	s.podIP++
	ip := fmt.Sprintf("10.64.%d.%d", s.podIP/250, s.podIP%250+2)
	s.mu.Unlock()
	st := &pod.Status
	st.Phase = corev1.PodRunning
	st.StartTime = &now
	st.PodIP = ip
	st.PodIPs = []corev1.PodIP{{IP: ip}}
	st.HostIP = "10.128.0.2"
	st.HostIPs = []corev1.HostIP{{IP: st.HostIP}}
	st.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	st.InitContainerStatuses = nil
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: "sim://" + pod.Name + "/" + c.Name}
		if isSidecar(c) {
			// A native sidecar has started once its startup probe passed.
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: now}
			cs.Started, cs.Ready = ptrTrue(), true
		} else {
			cs.State.Terminated = &corev1.ContainerStateTerminated{Reason: "Completed", StartedAt: now, FinishedAt: now}
			cs.Started = new(bool)
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
	}
	st.ContainerStatuses = nil
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, ContainerID: "sim://" + pod.Name + "/" + c.Name,
			State:   corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			Started: ptrTrue(), Ready: true,
		})
	}
	_, err := s.kube.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}

func (s *NodeSimulator) finish(ctx context.Context, pod *corev1.Pod, outcome Outcome) error {
	now := metav1.Now()
	st := &pod.Status
	st.Phase = corev1.PodSucceeded
	if outcome == Fail {
		st.Phase = corev1.PodFailed
	}
	for i := range st.Conditions {
		if st.Conditions[i].Type == corev1.PodReady || st.Conditions[i].Type == corev1.ContainersReady {
			st.Conditions[i].Status = corev1.ConditionFalse
			st.Conditions[i].Reason = "PodCompleted"
			st.Conditions[i].LastTransitionTime = now
		}
	}
	terminate := func(cs *corev1.ContainerStatus, code int32) {
		reason := "Completed"
		if code != 0 {
			reason = "Error"
		}
		started := metav1.Now()
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		}
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: started, FinishedAt: now}}
		cs.Ready = false
		cs.Started = new(bool)
	}
	for i := range st.ContainerStatuses {
		code := int32(0)
		if outcome == Fail {
			code = 1
		}
		terminate(&st.ContainerStatuses[i], code)
	}
	for i := range st.InitContainerStatuses {
		if st.InitContainerStatuses[i].State.Running != nil {
			// Sidecars are stopped once the main containers ended.
			terminate(&st.InitContainerStatuses[i], 0)
		}
	}
	_, err := s.kube.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}

func ptrTrue() *bool { b := true; return &b }
