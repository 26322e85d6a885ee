package e2e

import (
	"context"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tcpxogen/tcpxogen/e2e/harness"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
)

// TestDRANETByItsDriversDevices: a managed DRANET pool whose nodes carry no
// DRANET label is still told apart, by what the cluster itself says: the
// DeviceClass mrdma.google.com (the name Google's managed DRANET
// documentation and nccl-test-managed-rdma.yaml use) selects a driver in
// its CEL selector, and that driver publishes devices in ResourceSlices on
// the pool's nodes. discover, render runtime --from-cluster and check
// cluster refuse the pool naming DRANET, the nodes and the driver, through
// the real API server's resource.k8s.io/v1 validation of both objects. The
// driver name is made up: Google does not publish it, and tcpxogen reads
// it from the DeviceClass.
func TestDRANETByItsDriversDevices(t *testing.T) {
	ctx := context.Background()
	const driver = "mrdma.dranet.example.com"
	mt := fabric.GIB.MachineTypes[0]
	pool := harness.Pool{Name: "dranet", InstanceType: mt.Name, Accelerator: mt.Accelerator, Nodes: 2}
	nodes := addClusterPool(t, ctx, pool)
	rdma := []string{"dranet-rdma-0", "dranet-rdma-1", "dranet-rdma-2", "dranet-rdma-3", "dranet-rdma-4", "dranet-rdma-5", "dranet-rdma-6", "dranet-rdma-7"}
	provisionGIB(t, ctx, rdma, nil, nodes, func(string) []harness.HostNIC { return harness.RDMANICs("", rdma) })
	selector := poolSelector(pool.Name)
	discover := []string{"discover", "--fabric", "gib", "--node-selector", selector}

	// Without DRANET's objects the pool is a gIB pool.
	if code, out, errs := runCLI(t, discover...); code != 0 || !strings.HasPrefix(out, "eth2=dranet-rdma-0,") {
		t.Fatalf("discover on the pool before DRANET: exit %d, %q\n%s", code, out, errs)
	}

	dranetDeviceClass(t, ctx, driver)
	resource := cp.Kube.ResourceV1()
	slice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: nodes[1] + "-mrdma"}, Spec: resourcev1.ResourceSliceSpec{
		Driver: driver, NodeName: ptr.To(nodes[1]), Pool: resourcev1.ResourcePool{Name: nodes[1], Generation: 1, ResourceSliceCount: 1},
		Devices: []resourcev1.Device{{Name: "mrdma0"}, {Name: "mrdma1"}}}}
	if _, err := resource.ResourceSlices().Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := resource.ResourceSlices().Delete(context.Background(), slice.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting ResourceSlice %s: %v", slice.Name, err)
		}
	})
	want := []string{"1 node (" + nodes[1] + ") publishes devices of " + driver + ", the driver DeviceClass " + fabric.DRANETDeviceClass + " selects", "managed DRANET", "mutually exclusive attachment modes"}
	for _, args := range [][]string{
		discover,
		{"render", "runtime", "--fabric", "gib", "--machine-type", mt.Name, "--from-cluster", "--node-selector", selector},
		{"check", "cluster", "--fabric", "gib", "--node-selector", selector},
	} {
		code, out, errs := runCLI(t, args...)
		if code != 1 || out != "" {
			t.Errorf("%v on a DRANET pool: exit %d, stdout %q; want 1 and nothing printed\n%s", args, code, out, errs)
		}
		for _, w := range want {
			if !strings.Contains(errs, w) {
				t.Errorf("%v does not say %q:\n%s", args, w, errs)
			}
		}
	}
}

// dranetDeviceClass creates managed DRANET's DeviceClass (mrdma.google.com)
// selecting driver, as GKE does on a cluster with DRANET, and deletes it
// when t ends. With it, discover, check cluster and validate read the
// driver's ResourceSlices, so the role tests see both DRANET reads made.
func dranetDeviceClass(t *testing.T, ctx context.Context, driver string) {
	t.Helper()
	classes := cp.Kube.ResourceV1().DeviceClasses()
	class := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: fabric.DRANETDeviceClass}, Spec: resourcev1.DeviceClassSpec{
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "` + driver + `"`}}}}}
	if _, err := classes.Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := classes.Delete(context.Background(), class.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting DeviceClass %s: %v", class.Name, err)
		}
	})
}
