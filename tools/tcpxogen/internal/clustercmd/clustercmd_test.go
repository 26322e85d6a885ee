package clustercmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// gpuNode is a node as GKE publishes one (the networks as extended
// resources, north-interfaces and nic-info in the gke-networking-api's own
// format, the machine's labels): the network nets[i] sits on host NIC
// eth<first+i>.
func gpuNode(t *testing.T, name string, lbls map[string]string, first int, nets []string) corev1.Node {
	t.Helper()
	res := corev1.ResourceList{
		corev1.ResourceName(networkv1.NetworkResourceKeyPrefix + networkv1.DefaultPodNetworkName): resource.MustParse("1"),
		"nvidia.com/gpu": resource.MustParse("8"),
	}
	info := networkv1.NICInfoAnnotation{{BirthName: "eth0", BirthIP: "10.0.0.2", PCIAddress: "0000:00:05.0"}}
	var north networkv1.NorthInterfacesAnnotation
	for i, n := range nets {
		ip := fmt.Sprintf("192.168.%d.2", i+first)
		info = append(info, networkv1.NICInfoRef{BirthName: fmt.Sprintf("eth%d", i+first), BirthIP: ip, PCIAddress: fmt.Sprintf("0000:%02x:00.0", 0x10+i)})
		north = append(north, networkv1.NorthInterface{Network: n, IpAddress: ip})
		res[corev1.ResourceName(networkv1.NetworkResourceKeyPrefix+n)] = resource.MustParse("1")
		res[corev1.ResourceName(networkv1.NetworkResourceKeyPrefix+n+".IP")] = resource.MustParse("1")
	}
	northJSON, err := networkv1.MarshalNorthInterfacesAnnotation(north)
	if err != nil {
		t.Fatal(err)
	}
	infoJSON, err := networkv1.MarshalNICInfoAnnotation(info)
	if err != nil {
		t.Fatal(err)
	}
	return corev1.Node{
		TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls, Annotations: map[string]string{
			networkv1.NorthInterfacesAnnotationKey: northJSON,
			networkv1.NICInfoAnnotationKey:         infoJSON,
		}},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res, NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.31.5-gke.1000000"}},
	}
}

func names(prefix string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

func machine(mt, accelerator string) map[string]string {
	return map[string]string{"node.kubernetes.io/instance-type": mt, "cloud.google.com/gke-accelerator": accelerator, "cloud.google.com/gke-nodepool": "gpu"}
}

var (
	megaLabels  = machine("a3-megagpu-8g", "nvidia-h100-mega-80gb")
	ultraLabels = machine("a3-ultragpu-8g", "nvidia-h200-141gb")
	a4Labels    = machine("a4-highgpu-8g", "nvidia-b200")
	highLabels  = machine("a3-highgpu-8g", "nvidia-h100-80gb")
)

// fakeCluster serves the nodes (filtered by the request's label selector,
// as the API server does), Ready Device networks of the given names with
// their GKENetworkParamSets of the given deviceMode, and nothing else (404).
type fakeCluster struct {
	nodes    []corev1.Node
	networks map[string]networkv1.DeviceModeType
}

func (c fakeCluster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/api/v1/nodes":
		sel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		list := corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}}
		for _, n := range c.nodes {
			if sel.Matches(labels.Set(n.Labels)) {
				list.Items = append(list.Items, n)
			}
		}
		json.NewEncoder(w).Encode(list)
		return
	case "/apis/networking.gke.io/v1/networks", "/apis/networking.gke.io/v1/gkenetworkparamsets":
		kind := "Network"
		if strings.HasSuffix(r.URL.Path, "paramsets") {
			kind = "GKENetworkParamSet"
		}
		var items []any
		for name, mode := range c.networks {
			ready := []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
			meta := metav1.ObjectMeta{Name: name}
			tm := metav1.TypeMeta{Kind: kind, APIVersion: networkv1.SchemeGroupVersion.String()}
			if kind == "Network" {
				items = append(items, networkv1.Network{TypeMeta: tm, ObjectMeta: meta, Spec: networkv1.NetworkSpec{Type: networkv1.DeviceNetworkType,
					ParametersRef: &networkv1.NetworkParametersReference{Group: networkv1.GroupName, Kind: "GKENetworkParamSet", Name: name}},
					Status: networkv1.NetworkStatus{Conditions: ready}})
				continue
			}
			items = append(items, networkv1.GKENetworkParamSet{TypeMeta: tm, ObjectMeta: meta, Spec: networkv1.GKENetworkParamSetSpec{VPC: "vpc", VPCSubnet: name, DeviceMode: mode},
				Status: networkv1.GKENetworkParamSetStatus{Conditions: ready}})
		}
		json.NewEncoder(w).Encode(map[string]any{"kind": kind + "List", "apiVersion": networkv1.SchemeGroupVersion.String(), "metadata": map[string]any{}, "items": items})
		return
	case "/api/v1/namespaces/kube-system/pods":
		json.NewEncoder(w).Encode(corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}})
		return
	}
	w.WriteHeader(http.StatusNotFound)
	json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound})
}

// kubeconfig writes a kubeconfig whose current context is the server at
// url.
func kubeconfig(t *testing.T, url string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	data := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: %q}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n", url)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs a cluster command against c: "discover ..." or "check cluster
// ...".
func run(t *testing.T, c fakeCluster, args ...string) (int, string, string) {
	t.Helper()
	ts := httptest.NewServer(c)
	t.Cleanup(ts.Close)
	cmds := Commands()
	cmds["check"] = cli.Command{Run: func(ctx context.Context, args []string, s cli.Streams) error {
		return CheckCluster(ctx, args[1:], s)
	}}
	var o, e bytes.Buffer
	code := cli.Main(context.Background(), append(args, "--kubeconfig", kubeconfig(t, ts.URL)), cli.Streams{Out: &o, Err: &e}, cmds)
	return code, o.String(), e.String()
}

func megaPool(t *testing.T, n int) fakeCluster {
	c := fakeCluster{networks: map[string]networkv1.DeviceModeType{}}
	for _, net := range names("vpc", 8) {
		c.networks[net] = networkv1.NetDevice
	}
	for i := range n {
		c.nodes = append(c.nodes, gpuNode(t, fmt.Sprintf("gke-mega-%d", i), megaLabels, 1, names("vpc", 8)))
	}
	return c
}

// TCPXO's discover on a healthy A3 Mega pool prints what it printed before
// the machine type was judged, byte for byte.
func TestDiscoverMegaUnchanged(t *testing.T) {
	code, out, errs := run(t, megaPool(t, 2), "discover")
	if want := "eth1=vpc0,eth2=vpc1,eth3=vpc2,eth4=vpc3,eth5=vpc4,eth6=vpc5,eth7=vpc6,eth8=vpc7\n"; code != cli.ExitOK || out != want {
		t.Errorf("exit %d, %q (stderr %s), want %q", code, out, errs, want)
	}
	code, out, _ = run(t, megaPool(t, 2), "discover", "-o", "values")
	if code != cli.ExitOK || !strings.HasPrefix(out, "tcpxoInterfaces:\n  - {interfaceName: eth1, network: \"vpc0\"}\n") {
		t.Errorf("exit %d, %q", code, out)
	}
}

// check cluster on an A3 Mega pool judges what it judged before: the
// pool's machine type adds no finding and no line.
func TestCheckClusterMegaUnchanged(t *testing.T) {
	code, out, errs := run(t, megaPool(t, 1), "check", "cluster", "-v")
	if code != cli.ExitFailure || !strings.Contains(out, "FAIL installer gke-mega-0: no installer pod") || !strings.Contains(out, "ok   topology gke-mega-0: eight GPU NICs on eight PCI slots") {
		t.Errorf("exit %d:\n%s\n%s", code, out, errs)
	}
	for _, s := range []string{"machine type", "fabric", "instance-type"} {
		if strings.Contains(out+errs, s) {
			t.Errorf("an A3 Mega pool's check names %q:\n%s%s", s, out, errs)
		}
	}
}

func TestPoolRefusals(t *testing.T) {
	mega := megaPool(t, 2)
	withNodes := func(nodes ...corev1.Node) fakeCluster { return fakeCluster{nodes: nodes, networks: mega.networks} }
	unlabelled := gpuNode(t, "gke-mega-9", map[string]string{"cloud.google.com/gke-accelerator": "nvidia-h100-mega-80gb"}, 1, names("vpc", 8))
	ultra := gpuNode(t, "gke-ultra-0", ultraLabels, 2, names("rdma-", 8))
	a4 := gpuNode(t, "gke-a4-0", a4Labels, 2, names("rdma-", 8))
	high := gpuNode(t, "gke-high-0", highLabels, 1, names("vpc", 4))
	pool := []string{"--node-selector", "cloud.google.com/gke-nodepool=gpu"}
	dranet := gpuNode(t, "gke-dranet-0", machine("a3-ultragpu-8g", "nvidia-h200-141gb"), 2, nil)
	dranet.Labels["cloud.google.com/gke-networking-dra-driver"] = "true"
	for name, tc := range map[string]struct {
		c    fakeCluster
		args []string
		want []string
	}{
		"no instance-type label":          {withNodes(mega.nodes[0], unlabelled), nil, []string{"1 node (gke-mega-9) carries no node.kubernetes.io/instance-type label"}},
		"A3 Mega and A3 Ultra":            {withNodes(append(mega.nodes, ultra)...), pool, []string{"mix machine types", "a3-megagpu-8g on 2 nodes (gke-mega-0, gke-mega-1)", "a3-ultragpu-8g on 1 node (gke-ultra-0)"}},
		"A3 High":                         {withNodes(high), pool, []string{"machine type a3-highgpu-8g", "GPUDirect-TCPX"}},
		"TCPXO aimed at A3 Ultra":         {withNodes(ultra), pool, []string{"these nodes are a3-ultragpu-8g (gke-ultra-0), served by gib", "run with --fabric gib"}},
		"TCPXO aimed at A4":               {withNodes(a4), pool, []string{"these nodes are a4-highgpu-8g (gke-a4-0), served by gib"}},
		"a DRANET pool, gib":              {withNodes(dranet), append([]string{"--fabric", "gib"}, pool...), []string{"1 node (gke-dranet-0) is labelled cloud.google.com/gke-networking-dra-driver=true", "managed DRANET", "mutually exclusive"}},
		"a DRANET pool, default selector": {withNodes(dranet), []string{"--fabric", "gib"}, []string{"gke-dranet-0", "managed DRANET"}},
		"gIB aimed at A3 Mega":            {mega, append([]string{"--fabric", "gib"}, pool...), []string{"--fabric gib", "these nodes are a3-megagpu-8g", "run with --fabric tcpxo"}},
	} {
		for _, cmd := range [][]string{{"discover"}, {"check", "cluster"}} {
			t.Run(name+"/"+strings.Join(cmd, " "), func(t *testing.T) {
				code, out, errs := run(t, tc.c, append(cmd, tc.args...)...)
				if code != cli.ExitFailure {
					t.Errorf("exit %d, want 1:\n%s%s", code, out, errs)
				}
				if strings.Contains(out, "topology") || strings.Contains(out, "eth1=") {
					t.Errorf("judged the NICs of a refused pool:\n%s", out)
				}
				for _, w := range tc.want {
					if !strings.Contains(errs, w) {
						t.Errorf("stderr %s\nwant it to say %q", errs, w)
					}
				}
			})
		}
	}
}

func TestBadFabricExits2(t *testing.T) {
	for _, cmd := range [][]string{{"discover"}, {"check", "cluster"}} {
		code, _, errs := run(t, megaPool(t, 1), append(cmd, "--fabric", "tcpx")...)
		if code != cli.ExitUsage || !strings.Contains(errs, `--fabric: unknown fabric "tcpx": use one of tcpxo, gib`) {
			t.Errorf("%v: exit %d, %s", cmd, code, errs)
		}
	}
}

func gibPool(t *testing.T, lbls map[string]string, gvnic bool) fakeCluster {
	c := fakeCluster{networks: map[string]networkv1.DeviceModeType{}}
	nets := names("rdma-", 8)
	for _, net := range nets {
		c.networks[net] = networkv1.RDMA
	}
	first := 2
	if gvnic {
		c.networks["gvnic-1"] = networkv1.NetDevice
		nets, first = append([]string{"gvnic-1"}, nets...), 1
	}
	for i := range 2 {
		c.nodes = append(c.nodes, gpuNode(t, fmt.Sprintf("gke-gib-%d", i), lbls, first, nets))
	}
	return c
}

func TestDiscoverGIB(t *testing.T) {
	code, out, errs := run(t, gibPool(t, ultraLabels, true), "discover", "--fabric", "gib")
	if want := "eth1=gvnic-1,eth2=rdma-0,eth3=rdma-1,eth4=rdma-2,eth5=rdma-3,eth6=rdma-4,eth7=rdma-5,eth8=rdma-6,eth9=rdma-7\n"; code != cli.ExitOK || out != want {
		t.Errorf("A3 Ultra: exit %d, %q (stderr %s), want %q", code, out, errs, want)
	}
	code, out, errs = run(t, gibPool(t, a4Labels, false), "discover", "--fabric", "gib", "-o", "values")
	if !strings.HasPrefix(out, "rdmaInterfaces:\n  - {interfaceName: eth2, network: \"rdma-0\"}\n") || strings.Count(out, "interfaceName") != 8 || code != cli.ExitOK {
		t.Errorf("A4: exit %d, %q (stderr %s)", code, out, errs)
	}
	code, out, errs = run(t, gibPool(t, a4Labels, false), "discover", "--fabric", "gib", "-o", "yaml")
	if code != cli.ExitOK || !strings.Contains(out, "interfaces: eth2=rdma-0,") || !strings.Contains(out, "hostNIC: eth9") {
		t.Errorf("A4 yaml: exit %d, %q (stderr %s)", code, out, errs)
	}
	// Seven RDMA networks: refused, exit 1, nothing printed.
	seven := gibPool(t, ultraLabels, false)
	seven.nodes[1] = gpuNode(t, "gke-gib-1", ultraLabels, 2, names("rdma-", 7))
	code, out, errs = run(t, seven, "discover", "--fabric", "gib")
	if code != cli.ExitFailure || out != "" || !strings.Contains(errs, "node gke-gib-1 advertises 7 RDMA-NIC networks") {
		t.Errorf("seven: exit %d, %q, %s", code, out, errs)
	}
	// check cluster --fabric gib judges the pool's nodes in the RDMA
	// layout: topology passes, no installer pod fails with gIB's fix.
	code, out, errs = run(t, gibPool(t, ultraLabels, true), "check", "cluster", "--fabric", "gib", "-v")
	for _, w := range []string{
		"ok   topology gke-gib-0: eight RDMA NICs on eight PCI slots: eth1=gvnic-1,eth2=rdma-0,",
		"FAIL installer gke-gib-1: no installer pod (k8s-app=nccl-rdma-installer) runs on the node",
		"apply tcpxogen render components --fabric gib",
		"check cluster: FAIL",
	} {
		if code != cli.ExitFailure || !strings.Contains(out, w) {
			t.Errorf("check cluster --fabric gib without the installer: exit %d, want it to say %q:\n%s%s", code, w, out, errs)
		}
	}
}

// A recipe of another fabric is bad input (exit 2); a recipe of another
// machine type than the pool's is refused (exit 1) before any node is
// judged, naming both.
func TestCheckClusterRecipeFitsThePool(t *testing.T) {
	recipes := filepath.Join("..", "..", "..", "..", "testdata", "recipes")
	code, out, errs := run(t, gibPool(t, ultraLabels, true), "check", "cluster", "--fabric", "gib", "--recipe", filepath.Join(recipes, "gke-h100.yaml"))
	if code != cli.ExitUsage || out != "" || !strings.Contains(errs, "is for fabric tcpxo, not --fabric gib") {
		t.Errorf("a TCPXO recipe with --fabric gib: exit %d, %q, %s", code, out, errs)
	}
	code, out, errs = run(t, megaPool(t, 2), "check", "cluster", "--recipe", filepath.Join(recipes, "gke-a4-gib.yaml"))
	if code != cli.ExitUsage || out != "" || !strings.Contains(errs, "is for fabric gib, not --fabric tcpxo: run check cluster --fabric gib") {
		t.Errorf("a gIB recipe with --fabric tcpxo: exit %d, %q, %s", code, out, errs)
	}
	code, out, errs = run(t, gibPool(t, ultraLabels, true), "check", "cluster", "--fabric", "gib", "--recipe", filepath.Join(recipes, "gke-a4-gib.yaml"))
	if code != cli.ExitFailure || out != "" || !strings.Contains(errs, "the recipe is for a4-highgpu-8g, but the target nodes are a3-ultragpu-8g") || !strings.Contains(errs, "torch-distributed-rdma-a4-highgpu-8g") {
		t.Errorf("an A4 recipe on an A3 Ultra pool: exit %d, %q, %s", code, out, errs)
	}
}
