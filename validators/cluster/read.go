package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/tcpxogen/tcpxogen/internal/access"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/kubeconfig"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

// DefaultNodeSelector selects A3 Mega GPU nodes by the accelerator label GKE
// sets (cloud.google.com/gke-accelerator, the shipped runtime's node
// selector).
const DefaultNodeSelector = "cloud.google.com/gke-accelerator=nvidia-h100-mega-80gb"

// Clients are what discover and check cluster read through, every request
// held to the command's declared permissions (package access).
type Clients struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	Guard   *access.Guard
	Host    string
}

// Connect builds the clients of command (access.Discover or
// access.CheckCluster) from --kubeconfig and --context, guarded by its
// declared list bound to namespace (the installer's).
func Connect(list access.List, kubeconfigPath, kubeContext, namespace string) (*Clients, error) {
	cfg, err := kubeconfig.Load(kubeconfigPath, kubeContext, "tcpxogen-"+list.Command, "read")
	if err != nil {
		return nil, err
	}
	b, err := list.Bind(namespace)
	if err != nil {
		return nil, &kubeconfig.InputError{Err: fmt.Errorf("--namespace: %w", err)}
	}
	guard := access.NewGuard(b)
	guard.Wrap(cfg)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the Kubernetes client for %s: %w", cfg.Host, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building the dynamic client for %s: %w", cfg.Host, err)
	}
	return &Clients{Kube: kube, Dynamic: dyn, Guard: guard, Host: cfg.Host}, nil
}

// Networks are the GKE multi-network objects the cluster holds.
type Networks struct {
	Networks  []networkv1.Network
	ParamSets []networkv1.GKENetworkParamSet
}

// ReadNodes lists the target nodes.
func ReadNodes(ctx context.Context, c *Clients, selector string) ([]corev1.Node, error) {
	list, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, c.Guard.Explain(fmt.Errorf("listing the nodes (selector %q) on %s: %w", selector, c.Host, err))
	}
	return list.Items, nil
}

// ReadNetworks lists the Network and GKENetworkParamSet objects. A cluster
// without GKE multi-networking serves neither kind: that reads as none.
func ReadNetworks(ctx context.Context, c *Clients) (Networks, error) {
	var out Networks
	if err := list(ctx, c, "networks", &out.Networks); err != nil {
		return out, err
	}
	if err := list(ctx, c, "gkenetworkparamsets", &out.ParamSets); err != nil {
		return out, err
	}
	return out, nil
}

func list[T any](ctx context.Context, c *Clients, resource string, into *[]T) error {
	ul, err := c.Dynamic.Resource(networkv1.SchemeGroupVersion.WithResource(resource)).List(ctx, metav1.ListOptions{})
	if meta.IsNoMatchError(err) || isNotServed(err) {
		return nil
	}
	if err != nil {
		return c.Guard.Explain(fmt.Errorf("listing %s.%s on %s: %w", resource, networkv1.GroupName, c.Host, err))
	}
	for _, u := range ul.Items {
		var v T
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &v); err != nil {
			return fmt.Errorf("%s %s does not decode as GKE's %s type: %w", resource, u.GetName(), networkv1.SchemeGroupVersion, err)
		}
		*into = append(*into, v)
	}
	return nil
}

// wantNetwork is one mapped network, with the deviceMode its
// GKENetworkParamSet must have ("" for any) and the interface that needs
// it.
type wantNetwork struct {
	name, iface string
	mode        networkv1.DeviceModeType
}

// mappedNetworks are m's networks with the deviceMode each must have: none
// for TCPXO (its GKENetworkParamSets' mode is not judged), RDMA for the
// RDMA layout's eight RDMA NICs and NetDevice for its gVNIC network on
// eth1 (Google's A3 Ultra and A4 setup).
func mappedNetworks(m interfaces.Mapping) []wantNetwork {
	var out []wantNetwork
	for _, b := range m.Bindings() {
		w := wantNetwork{name: b.Network, iface: b.Interface}
		if m.Layout() == interfaces.RDMA {
			w.mode = networkv1.RDMA
			if slices.Contains(interfaces.RDMA.OptionalInterfaces(), b.Interface) {
				w.mode = networkv1.NetDevice
			}
		}
		out = append(out, w)
	}
	return out
}

func networkProblems(want []wantNetwork, have Networks) []string {
	var out []string
	for _, w := range want {
		name := w.name
		i := slices.IndexFunc(have.Networks, func(n networkv1.Network) bool { return n.Name == name })
		if i < 0 {
			out = append(out, fmt.Sprintf("Network %s is missing (kubectl get networks): create it as a Device network with its GKENetworkParamSet", name))
			continue
		}
		n := have.Networks[i]
		if n.Spec.Type != networkv1.DeviceNetworkType {
			out = append(out, fmt.Sprintf("Network %s is of type %s, not %s: the GPU NICs are Device networks", name, n.Spec.Type, networkv1.DeviceNetworkType))
		}
		if !meta.IsStatusConditionTrue(n.Status.Conditions, string(networkv1.NetworkConditionStatusReady)) {
			out = append(out, fmt.Sprintf("Network %s is not Ready%s", name, conditionWhy(n.Status.Conditions, string(networkv1.NetworkConditionStatusReady))))
		}
		params := name
		if ref := n.Spec.ParametersRef; ref != nil && ref.Name != "" {
			params = ref.Name
		}
		j := slices.IndexFunc(have.ParamSets, func(p networkv1.GKENetworkParamSet) bool { return p.Name == params })
		if j < 0 {
			out = append(out, fmt.Sprintf("GKENetworkParamSet %s of Network %s is missing (kubectl get gkenetworkparamsets)", params, name))
			continue
		}
		p := have.ParamSets[j]
		if w.mode != "" && p.Spec.DeviceMode != w.mode {
			out = append(out, fmt.Sprintf("GKENetworkParamSet %s of Network %s has deviceMode %s, not %s, which the network on %s needs", params, name, orQuoted(string(p.Spec.DeviceMode)), w.mode, w.iface))
		}
		if !meta.IsStatusConditionTrue(p.Status.Conditions, string(networkv1.GKENetworkParamSetStatusReady)) {
			out = append(out, fmt.Sprintf("GKENetworkParamSet %s of Network %s is not Ready%s", params, name, conditionWhy(p.Status.Conditions, string(networkv1.GKENetworkParamSetStatusReady))))
		}
	}
	return out
}

func orQuoted(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

func conditionWhy(cs []metav1.Condition, t string) string {
	c := meta.FindStatusCondition(cs, t)
	if c == nil {
		return " (no " + t + " condition)"
	}
	why := strings.TrimSpace(c.Reason + ": " + c.Message)
	return fmt.Sprintf(" (%s %s, %s)", t, c.Status, strings.Trim(why, ": "))
}

// isNotServed tells a 404 for the whole resource (the CRD is not installed)
// from other errors.
func isNotServed(err error) bool {
	return apierrors.IsNotFound(err)
}

// ReadState reads what check cluster judges on nodes, a pool of fabric f's
// machine type mt (CheckPool): the GKE Networks, f's installer pods in
// namespace, and f's deployed shipped runtime for mt (for TCPXO its
// tcpxo-daemon images too).
func ReadState(ctx context.Context, c *Clients, f fabric.Fabric, mt fabric.MachineType, nodes []corev1.Node, namespace string) (State, error) {
	st := State{Nodes: nodes, Machine: mt}
	var err error
	if st.Networks, err = ReadNetworks(ctx, c); err != nil {
		return st, err
	}
	label := InstallerLabelOf(f)
	pods, err := c.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: label})
	if err != nil {
		return st, c.Guard.Explain(fmt.Errorf("listing the installer's pods (%s) in namespace %s: %w", label, namespace, err))
	}
	st.InstallerPods = pods.Items
	name := f.ShippedRuntime(mt.Name)
	rt, err := c.Dynamic.Resource(trainerRuntimes).Get(ctx, name, metav1.GetOptions{})
	switch {
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		// Not deployed, or no trainer to deploy it on.
		return st, nil
	case err != nil:
		return st, c.Guard.Explain(fmt.Errorf("reading ClusterTrainingRuntime %s: %w", name, err))
	}
	st.Runtime = rt
	if f.Name == fabric.TCPXO.Name {
		st.DaemonImages = append([]string{}, imagesOf(rt.Object, names.DaemonContainer)...)
	}
	return st, nil
}

// The trainer's resources check cluster reads.
var (
	trainerRuntimes   = trainer.GroupVersion.WithResource("clustertrainingruntimes")
	trainerNSRuntimes = trainer.GroupVersion.WithResource("trainingruntimes")
	trainerTrainJobs  = trainer.GroupVersion.WithResource("trainjobs")
)

// imagesOf finds the image of every container named name anywhere in a
// decoded object (the runtime nests its pod templates in its job templates).
func imagesOf(v any, name string) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		if n, _ := x["name"].(string); n == name {
			if img, ok := x["image"].(string); ok {
				out = append(out, img)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out = append(out, imagesOf(x[k], name)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, imagesOf(e, name)...)
		}
	}
	return out
}
