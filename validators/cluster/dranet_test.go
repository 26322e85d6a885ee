package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
)

// dranetClass is a DeviceClass named as GKE's managed DRANET one whose
// selectors are exprs. The driver names in these tests are made up: the
// code reads the driver from the DeviceClass, never assumes one (Google
// publishes the DeviceClass's name, mrdma.google.com, not its driver's).
func dranetClass(exprs ...string) *resourcev1.DeviceClass {
	dc := &resourcev1.DeviceClass{TypeMeta: metav1.TypeMeta{APIVersion: resourcev1.SchemeGroupVersion.String(), Kind: "DeviceClass"}, ObjectMeta: metav1.ObjectMeta{Name: DRANETDeviceClass}}
	for _, e := range exprs {
		dc.Spec.Selectors = append(dc.Spec.Selectors, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: e}})
	}
	return dc
}

func resourceSlice(name, node, driver string) *resourcev1.ResourceSlice {
	return &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourcev1.ResourceSliceSpec{
		Driver: driver, NodeName: ptr.To(node), Pool: resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1},
		Devices: []resourcev1.Device{{Name: "mrdma-0"}}}}
}

func TestSelectedDrivers(t *testing.T) {
	for _, tc := range []struct {
		exprs []string
		want  []string
	}{
		{[]string{`device.driver == "mrdma.example.com"`}, []string{"mrdma.example.com"}},
		{[]string{`"b.example" == device.driver && device.attributes["b.example"].type == "rdma"`}, []string{"b.example"}},
		{[]string{`device.driver == "a.example"`, `device.driver == "a.example" || device.driver == "c.example"`}, []string{"a.example", "c.example"}},
		// Not an equality with device.driver: no driver is named.
		{[]string{`device.driver != "z.example"`, `device.attributes["x"].driver == "y"`, `driver == "w"`}, nil},
		// CEL that does not parse names none, rather than a guess.
		{[]string{`device.driver == "unterminated`}, nil},
	} {
		if got := selectedDrivers(dranetClass(tc.exprs...)); !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.exprs, got, tc.want)
		}
	}
}

func dranetClients(t *testing.T, nodes []corev1.Node, objs ...runtime.Object) *Clients {
	t.Helper()
	c := fakeClients(t, nodes, rdmaNetworks(t))
	kobjs := objs
	for i := range nodes {
		kobjs = append(kobjs, &nodes[i])
	}
	c.Kube = kubefake.NewClientset(kobjs...)
	return c
}

// A pool managed DRANET's driver publishes devices on is refused as one
// labelled for it is, naming the nodes and the driver; the driver is the
// one the cluster's DeviceClass selects.
func TestDRANETByResourceSlices(t *testing.T) {
	ctx := context.Background()
	nodes := gibPool(t, 3, "a3-ultragpu-8g", a3Ultra("gvnic-1", rdmaNames(8)))
	class := dranetClass(`device.driver == "mrdma.example.com"`)
	for name, tc := range map[string]struct {
		objs []runtime.Object
		want []string // nil: not refused
	}{
		"slices of the class's driver on two nodes": {[]runtime.Object{class, resourceSlice("s0", "gke-a3-pool-0", "mrdma.example.com"), resourceSlice("s2", "gke-a3-pool-2", "mrdma.example.com")},
			[]string{"2 nodes (gke-a3-pool-0, gke-a3-pool-2) publish devices of mrdma.example.com, the driver DeviceClass mrdma.google.com selects, in ResourceSlices", "managed DRANET", "mutually exclusive attachment modes", "--fabric gib's runtime"}},
		"labelled and publishing": {[]runtime.Object{class, resourceSlice("s1", "gke-a3-pool-1", "mrdma.example.com")}, nil},
		"a GPU driver's slices":   {[]runtime.Object{class, resourceSlice("g0", "gke-a3-pool-0", "gpu.example.com")}, nil},
		"slices on other nodes":   {[]runtime.Object{class, resourceSlice("o0", "gke-other-0", "mrdma.example.com")}, nil},
		// Without the DeviceClass nothing tells DRANET's driver: only the
		// label can say, and a guess at the driver is not made.
		"no DeviceClass": {[]runtime.Object{resourceSlice("s0", "gke-a3-pool-0", "mrdma.example.com")}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			ns := slices.Clone(nodes)
			if name == "labelled and publishing" {
				ns[0].Labels = map[string]string{fabric.InstanceTypeLabel: "a3-ultragpu-8g", fabric.AcceleratorLabel: "nvidia-h200-141gb", DRANETLabel: "true"}
				tc.want = []string{"1 node (gke-a3-pool-0) is labelled " + DRANETLabel + "=true; 1 node (gke-a3-pool-1) publishes devices of mrdma.example.com"}
			}
			_, err := RunDiscover(ctx, dranetClients(t, ns, tc.objs...), fabric.GIB, NodeSelectorFor(fabric.GIB))
			if tc.want == nil {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrPool) {
				t.Fatalf("%v, want ErrPool", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nwant it to say %q", err, w)
				}
			}
		})
	}
}
