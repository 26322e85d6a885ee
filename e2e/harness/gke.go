package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HostNIC is one NIC of a simulated GKE node as GKE describes it: its birth
// name, the network on it ("" for the default network's eth0), its IP and
// its PCI slot.
type HostNIC struct {
	Name, Network, IP, PCI string
}

// gpuSlots are the PCI slots GKE reported for the eight GPU NICs on live
// a3-megagpu-8g nodes (observed, not a documented contract; round-3 facts).
var gpuSlots = []string{"0000:06:00.0", "0000:07:00.0", "0000:0d:00.0", "0000:0e:00.0", "0000:86:00.0", "0000:87:00.0", "0000:8d:00.0", "0000:8e:00.0"}

// A3MegaNICs is a healthy a3-megagpu-8g node: eth0 on the default network,
// ethN carrying networks[N-1] on its GPU-NIC slot.
func A3MegaNICs(networks []string) []HostNIC {
	nics := []HostNIC{{Name: "eth0", IP: "10.128.0.2", PCI: "0000:00:05.0"}}
	for i, n := range networks {
		nics = append(nics, HostNIC{Name: fmt.Sprintf("eth%d", i+1), Network: n, IP: fmt.Sprintf("192.168.%d.2", i+1), PCI: gpuSlots[i%len(gpuSlots)]})
	}
	return nics
}

// rdmaSlots are PCI slots for an A3 Ultra / A4 node's eth1 and its eight
// RDMA NICs eth2..eth9: made up (one slot each), never a rule; no public
// source lists the slots GKE reports on these machines.
var rdmaSlots = []string{"0000:0c:00.0", "0000:91:00.0", "0000:92:00.0", "0000:93:00.0", "0000:94:00.0", "0000:95:00.0", "0000:96:00.0", "0000:97:00.0", "0000:98:00.0"}

// RDMANICs is a healthy a3-ultragpu-8g or a4-highgpu-8g node as Google's
// setup provisions one: eth0 on the default network, eth1 carrying gvnic
// ("" for no network there), eth(2+i) carrying rdma[i] on its own slot.
func RDMANICs(gvnic string, rdma []string) []HostNIC {
	nics := []HostNIC{{Name: "eth0", IP: "10.128.0.2", PCI: "0000:00:05.0"}, {Name: "eth1", Network: gvnic, IP: "10.129.0.2", PCI: rdmaSlots[0]}}
	for i, n := range rdma {
		nics = append(nics, HostNIC{Name: fmt.Sprintf("eth%d", i+2), Network: n, IP: fmt.Sprintf("192.168.%d.2", i+2), PCI: rdmaSlots[(i+1)%len(rdmaSlots)]})
	}
	return nics
}

// ProvisionPool makes the cluster a healthy A3 Mega pool as GKE shows one:
// the networks Ready Device networks, every node carrying them on
// eth1..eth8 (A3MegaNICs) and running the installer's pod with image.
func (cp *ControlPlane) ProvisionPool(ctx context.Context, networks []string, installer string) error {
	if err := cp.AttachNetworks(ctx, networks); err != nil {
		return err
	}
	if err := cp.MarkNetworksReady(ctx, networks); err != nil {
		return err
	}
	for _, n := range cp.Nodes.NodeNames() {
		if err := cp.SetNodeNICs(ctx, n, A3MegaNICs(networks)); err != nil {
			return err
		}
		if err := cp.SetInstallerPod(ctx, n, installer); err != nil {
			return err
		}
	}
	return nil
}

// SetNodeNICs makes a simulated node carry what GKE publishes about its
// NICs (gke-networking-api, apis/network/v1): the extended resources
// networking.gke.io.networks/<network> and <network>.IP (the default
// network's too), and the north-interfaces and nic-info annotations,
// written with the module's own marshalers. It replaces what the node had.
func (cp *ControlPlane) SetNodeNICs(ctx context.Context, node string, nics []HostNIC) error {
	var north networkv1.NorthInterfacesAnnotation
	var info networkv1.NICInfoAnnotation
	for _, n := range nics {
		info = append(info, networkv1.NICInfoRef{BirthName: n.Name, BirthIP: n.IP, PCIAddress: n.PCI})
		if n.Network != "" {
			north = append(north, networkv1.NorthInterface{Network: n.Network, IpAddress: n.IP})
		}
	}
	northJSON, err := networkv1.MarshalNorthInterfacesAnnotation(north)
	if err != nil {
		return err
	}
	infoJSON, err := networkv1.MarshalNICInfoAnnotation(info)
	if err != nil {
		return err
	}
	return cp.setNodeNICs(ctx, node, map[string]*string{networkv1.NorthInterfacesAnnotationKey: &northJSON, networkv1.NICInfoAnnotationKey: &infoJSON}, nics)
}

// SetNodeAnnotations sets (nil: removes) annotations of a node as given,
// for a missing or malformed annotation.
func (cp *ControlPlane) SetNodeAnnotations(ctx context.Context, node string, annotations map[string]*string) error {
	return cp.setNodeNICs(ctx, node, annotations, nil)
}

func (cp *ControlPlane) setNodeNICs(ctx context.Context, node string, annotations map[string]*string, nics []HostNIC) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	if err := cp.Client.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		return fmt.Errorf("annotating node %s: %w", node, err)
	}
	if nics == nil {
		return nil
	}
	n, err := cp.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, list := range []corev1.ResourceList{n.Status.Capacity, n.Status.Allocatable} {
		for name := range list {
			if strings.HasPrefix(string(name), networkv1.NetworkResourceKeyPrefix) {
				delete(list, name)
			}
		}
		for _, net := range append([]string{networkv1.DefaultPodNetworkName}, networksOf(nics)...) {
			list[corev1.ResourceName(networkv1.NetworkResourceKeyPrefix+net)] = resource.MustParse("1")
			list[corev1.ResourceName(networkv1.NetworkResourceKeyPrefix+net+".IP")] = resource.MustParse("1")
		}
	}
	if _, err := cp.Kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("advertising node %s's networks: %w", node, err)
	}
	return nil
}

func networksOf(nics []HostNIC) []string {
	var out []string
	for _, n := range nics {
		if n.Network != "" {
			out = append(out, n.Network)
		}
	}
	return out
}

// MarkNetworksReady sets the Ready condition on each network's Network and
// GKENetworkParamSet (AttachNetworks creates them), as GKE's controllers do
// once a network is usable.
func (cp *ControlPlane) MarkNetworksReady(ctx context.Context, networks []string) error {
	now := metav1.Now()
	for _, n := range networks {
		net := &networkv1.Network{}
		if err := cp.Client.Get(ctx, client.ObjectKey{Name: n}, net); err != nil {
			return fmt.Errorf("Network %s: %w", n, err)
		}
		net.Status.Conditions = []metav1.Condition{{Type: string(networkv1.NetworkConditionStatusReady), Status: metav1.ConditionTrue, Reason: "NetworkReady", Message: "simulated", LastTransitionTime: now}}
		if err := cp.Client.Status().Update(ctx, net); err != nil {
			return fmt.Errorf("Network %s status: %w", n, err)
		}
		params := &networkv1.GKENetworkParamSet{}
		if err := cp.Client.Get(ctx, client.ObjectKey{Name: n}, params); err != nil {
			return fmt.Errorf("GKENetworkParamSet %s: %w", n, err)
		}
		params.Status.Conditions = []metav1.Condition{{Type: string(networkv1.GKENetworkParamSetStatusReady), Status: metav1.ConditionTrue, Reason: string(networkv1.GNPReady), Message: "simulated", LastTransitionTime: now}}
		if err := cp.Client.Status().Update(ctx, params); err != nil {
			return fmt.Errorf("GKENetworkParamSet %s status: %w", n, err)
		}
	}
	return nil
}

// SetInstallerPod puts the TCPXO installer DaemonSet's pod on node
// (SetInstallerPodOf nccl-tcpxo-installer).
func (cp *ControlPlane) SetInstallerPod(ctx context.Context, node, image string) error {
	return cp.SetInstallerPodOf(ctx, "nccl-tcpxo-installer", node, image)
}

// SetInstallerPodOf puts installer DaemonSet daemonSet's pod on node, as
// the DaemonSet controller would (label k8s-app=<daemonSet> in kube-system,
// runtimes/components.yaml and components-rdma.yaml), its installer init
// container (named as the DaemonSet) running image. A pod already there
// gets the new image in place (a pod's image is mutable): deleting and
// recreating it races the node simulator, which finishes a deleted pod's
// deletion by name.
func (cp *ControlPlane) SetInstallerPodOf(ctx context.Context, daemonSet, node, image string) error {
	name := daemonSet + "-" + node
	pods := cp.Kube.CoreV1().Pods("kube-system")
	cur, err := pods.Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		cur.Spec.InitContainers[0].Image = image
		_, err = pods.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", Labels: map[string]string{"k8s-app": daemonSet}},
		Spec: corev1.PodSpec{
			NodeName:       node,
			InitContainers: []corev1.Container{{Name: daemonSet, Image: image}},
			Containers:     []corev1.Container{{Name: "pause", Image: "gke.gcr.io/pause:3.8"}},
		},
	}
	_, err = pods.Create(ctx, pod, metav1.CreateOptions{})
	return err
}
