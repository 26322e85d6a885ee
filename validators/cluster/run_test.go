package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
)

// gkeNetworks are the Network and GKENetworkParamSet objects GKE's A3 Mega
// setup creates for each GPU NIC: a Device network referencing its params,
// both Ready.
func typedNetworks(t *testing.T, names []string) Networks {
	t.Helper()
	return networksReady(names, true)
}

func networksReady(names []string, ready bool) Networks {
	status := metav1.ConditionTrue
	if !ready {
		status = metav1.ConditionFalse
	}
	var out Networks
	for _, n := range names {
		out.Networks = append(out.Networks, networkv1.Network{
			TypeMeta:   metav1.TypeMeta{APIVersion: networkv1.SchemeGroupVersion.String(), Kind: "Network"},
			ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec: networkv1.NetworkSpec{Type: networkv1.DeviceNetworkType,
				ParametersRef: &networkv1.NetworkParametersReference{Group: networkv1.GroupName, Kind: "GKENetworkParamSet", Name: n}},
			Status: networkv1.NetworkStatus{Conditions: []metav1.Condition{{Type: string(networkv1.NetworkConditionStatusReady), Status: status, Reason: "NetworkReady", LastTransitionTime: metav1.Now()}}},
		})
		out.ParamSets = append(out.ParamSets, networkv1.GKENetworkParamSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: networkv1.SchemeGroupVersion.String(), Kind: "GKENetworkParamSet"},
			ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec:       networkv1.GKENetworkParamSetSpec{VPC: "vpc-" + n, VPCSubnet: "sub-" + n, DeviceMode: networkv1.NetDevice},
			Status:     networkv1.GKENetworkParamSetStatus{Conditions: []metav1.Condition{{Type: string(networkv1.GKENetworkParamSetStatusReady), Status: metav1.ConditionTrue, Reason: "GNPReady", LastTransitionTime: metav1.Now()}}},
		})
	}
	return out
}

// gkeNetworks are the Network and GKENetworkParamSet objects GKE's A3 Mega
// setup creates for each GPU NIC (a Device network referencing its params),
// as the dynamic client serves them.
func gkeNetworks(t *testing.T, names []string, ready bool) []runtime.Object {
	t.Helper()
	nets := networksReady(names, ready)
	var objs []any
	for i := range nets.Networks {
		objs = append(objs, &nets.Networks[i], &nets.ParamSets[i])
	}
	var out []runtime.Object
	for _, o := range objs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &unstructured.Unstructured{Object: u})
	}
	return out
}

func fakeClients(t *testing.T, nodes []corev1.Node, objs []runtime.Object) *Clients {
	t.Helper()
	var kobjs []runtime.Object
	for i := range nodes {
		n := nodes[i]
		if n.Labels == nil {
			n.Labels = map[string]string{fabric.AcceleratorLabel: "nvidia-h100-mega-80gb", fabric.InstanceTypeLabel: "a3-megagpu-8g"}
		}
		kobjs = append(kobjs, &n)
	}
	gvrs := map[schema.GroupVersionResource]string{
		networkv1.SchemeGroupVersion.WithResource("networks"):            "NetworkList",
		networkv1.SchemeGroupVersion.WithResource("gkenetworkparamsets"): "GKENetworkParamSetList",
	}
	return &Clients{Kube: kubefake.NewClientset(kobjs...), Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), gvrs, objs...), Host: "https://cluster.test"}
}

func TestRunDiscover(t *testing.T) {
	ctx := context.Background()
	nodes := pool(t, 2, a3Mega(vpcs(8)))
	f, err := RunDiscover(ctx, fakeClients(t, nodes, gkeNetworks(t, vpcs(8), true)), fabric.TCPXO, DefaultNodeSelector)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(f.Interfaces, "eth1=vpc1,") || len(f.Nodes) != 2 {
		t.Errorf("found %+v", f)
	}

	_, err = RunDiscover(ctx, fakeClients(t, nodes, gkeNetworks(t, vpcs(7), true)), fabric.TCPXO, DefaultNodeSelector)
	if !errors.Is(err, ErrNetworks) || !strings.Contains(err.Error(), "Network vpc8 is missing") {
		t.Errorf("a missing Network: %v", err)
	}
	_, err = RunDiscover(ctx, fakeClients(t, nodes, gkeNetworks(t, vpcs(8), false)), fabric.TCPXO, DefaultNodeSelector)
	if !errors.Is(err, ErrNetworks) || !strings.Contains(err.Error(), "Network vpc1 is not Ready") {
		t.Errorf("a Network not Ready: %v", err)
	}
	_, err = RunDiscover(ctx, fakeClients(t, nodes, nil), fabric.TCPXO, "cloud.google.com/gke-accelerator=nvidia-l4")
	if !errors.Is(err, ErrNoNodes) {
		t.Errorf("a selector that matches nothing: %v", err)
	}
}
