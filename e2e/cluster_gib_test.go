package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/e2e/harness"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes"
)

// The networks of Google's A3 Ultra / A4 setup ("Create a custom
// AI-optimized GKE cluster which uses A4 or A3 Ultra"): gvnic-1 of
// deviceMode NetDevice on eth1, rdma-0..rdma-7 of deviceMode RDMA on
// eth2..eth9 (gib-facts, cluster facts).
var (
	gibRDMANetworks = []string{"rdma-0", "rdma-1", "rdma-2", "rdma-3", "rdma-4", "rdma-5", "rdma-6", "rdma-7"}
	gibGVNIC        = "gvnic-1"
)

// gibGoogleMapping is what discover --fabric gib prints for a pool
// provisioned with those networks in Google's order.
const gibGoogleMapping = "eth1=gvnic-1,eth2=rdma-0,eth3=rdma-1,eth4=rdma-2,eth5=rdma-3,eth6=rdma-4,eth7=rdma-5,eth8=rdma-6,eth9=rdma-7"

// gibKubelet is a GKE version above both gIB machine types' floors
// (A3 Ultra 1.31.4-gke.1183000, A4 1.32.2-gke.1475000: Google's "Create a
// custom AI-optimized GKE cluster which uses A4 or A3 Ultra").
const gibKubelet = "v1.33.5-gke.1200000"

// addClusterPool registers p and, when t ends, deletes the gIB installer
// pods put on its nodes and the pool: the control plane is shared by the
// whole binary, and a node of a leftover pool would be matched by other
// tests' default node selectors.
func addClusterPool(t *testing.T, ctx context.Context, p harness.Pool) []string {
	t.Helper()
	if p.KubeletVersion == "" {
		p.KubeletVersion = gibKubelet
	}
	nodes, err := cp.Nodes.AddPool(ctx, p)
	t.Cleanup(func() {
		ctx := context.Background()
		zero := int64(0)
		for _, n := range nodes {
			err := cp.Kube.CoreV1().Pods("kube-system").Delete(ctx, fabric.GIB.InstallerDaemonSet+"-"+n, metav1.DeleteOptions{GracePeriodSeconds: &zero})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting the installer pod of %s: %v", n, err)
			}
		}
		if err := cp.Nodes.RemovePool(ctx, p.Name); err != nil {
			t.Errorf("removing pool %s: %v", p.Name, err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

// gibPoolOf is a pool of two nodes of machine type mt, as GKE labels them
// (internal/fabric's registry).
func gibPoolOf(t *testing.T, name, mt string) harness.Pool {
	t.Helper()
	m, ok := fabric.GIB.MachineType(mt)
	if !ok {
		t.Fatalf("the fabric registry has no gIB machine type %s: %v", mt, fabric.GIB.MachineTypeNames())
	}
	return harness.Pool{Name: name, InstanceType: m.Name, Accelerator: m.Accelerator, Nodes: 2}
}

// poolSelector selects the nodes of pool name by the label GKE puts on
// every node of a node pool.
func poolSelector(name string) string { return harness.NodePoolLabel + "=" + name }

// pinnedGIBInstaller is the gIB installer bom/bom.yaml pins.
func pinnedGIBInstaller(t *testing.T) string {
	t.Helper()
	b, _, _, err := bom.LoadEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	return b.Images.GIBInstaller.Reference
}

// provisionGIB makes the networks Ready GKE networks (rdma of deviceMode
// RDMA, netDevice of NetDevice, as Google's setup creates them), and each
// node carry nicsOf(node) as GKE publishes it and run the pinned gIB
// installer's pod.
func provisionGIB(t *testing.T, ctx context.Context, rdma, netDevice, nodes []string, nicsOf func(node string) []harness.HostNIC) {
	t.Helper()
	dropNewNetworks(t, ctx, append(slices.Clone(rdma), netDevice...))
	if err := cp.AttachNetworksOf(ctx, networkv1.RDMA, rdma); err != nil {
		t.Fatal(err)
	}
	if err := cp.AttachNetworks(ctx, netDevice); err != nil {
		t.Fatal(err)
	}
	if err := cp.MarkNetworksReady(ctx, append(slices.Clone(rdma), netDevice...)); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if err := cp.SetNodeNICs(ctx, n, nicsOf(n)); err != nil {
			t.Fatal(err)
		}
		if err := cp.SetInstallerPodOf(ctx, fabric.GIB.InstallerDaemonSet, n, pinnedGIBInstaller(t)); err != nil {
			t.Fatal(err)
		}
	}
}

// dropNewNetworks deletes, when t ends, the Network and
// GKENetworkParamSet of each of networks that does not exist yet: the
// TCPXO rows list every network of the shared control plane.
func dropNewNetworks(t *testing.T, ctx context.Context, networks []string) {
	t.Helper()
	for _, n := range networks {
		err := cp.Client.Get(ctx, client.ObjectKey{Name: n}, &networkv1.Network{})
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			for _, o := range []client.Object{&networkv1.Network{ObjectMeta: metav1.ObjectMeta{Name: n}}, &networkv1.GKENetworkParamSet{ObjectMeta: metav1.ObjectMeta{Name: n}}} {
				if err := cp.Client.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("deleting %T %s: %v", o, n, err)
				}
			}
		})
	}
}

// googleGIB provisions nodes as Google's setup does: gvnic-1 on eth1,
// rdma-0..rdma-7 on eth2..eth9.
func googleGIB(t *testing.T, ctx context.Context, nodes []string) {
	t.Helper()
	provisionGIB(t, ctx, gibRDMANetworks, []string{gibGVNIC}, nodes, func(string) []harness.HostNIC {
		return harness.RDMANICs(gibGVNIC, gibRDMANetworks)
	})
}

// keepGIBRuntime restores the gIB runtime of machine type mt when t ends
// as it was when t began (deleted if it did not exist): the runtime is
// cluster-scoped, other tests hold it to the committed golden, and a row
// must not be judged against the runtime a row before it deployed.
func keepGIBRuntime(t *testing.T, ctx context.Context, mt string) {
	t.Helper()
	name := fabric.GIB.RuntimeFor(mt)
	before := &trainer.ClusterTrainingRuntime{}
	err := cp.Client.Get(ctx, client.ObjectKey{Name: name}, before)
	existed := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		cur := &trainer.ClusterTrainingRuntime{}
		err := cp.Client.Get(ctx, client.ObjectKey{Name: name}, cur)
		switch {
		case apierrors.IsNotFound(err) && !existed:
		case err != nil && !apierrors.IsNotFound(err):
			t.Errorf("reading %s to restore it: %v", name, err)
		case !existed:
			if err := cp.Client.Delete(ctx, cur); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s: %v", name, err)
			}
		case apierrors.IsNotFound(err):
			restored := before.DeepCopy()
			restored.ResourceVersion, restored.UID, restored.ManagedFields = "", "", nil
			if err := cp.Client.Create(ctx, restored); err != nil {
				t.Errorf("restoring %s: %v", name, err)
			}
		default:
			cur.Labels, cur.Annotations, cur.Spec = before.Labels, before.Annotations, before.Spec
			if err := cp.Client.Update(ctx, cur); err != nil {
				t.Errorf("restoring %s: %v", name, err)
			}
		}
	})
}

// applyRuntimeYAML creates or replaces the one ClusterTrainingRuntime in
// data, strictly, through the trainer's webhook, as kubectl apply would.
func applyRuntimeYAML(t *testing.T, ctx context.Context, data []byte) {
	t.Helper()
	docs := documents(data)
	if len(docs) != 1 {
		t.Fatalf("%d documents, want one ClusterTrainingRuntime", len(docs))
	}
	u, err := decode(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	if u.GetKind() != trainer.ClusterTrainingRuntimeKind {
		t.Fatalf("a %s, want a ClusterTrainingRuntime", u.GetKind())
	}
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(u.GroupVersionKind())
	err = cp.Client.Get(ctx, client.ObjectKey{Name: u.GetName()}, cur)
	switch {
	case apierrors.IsNotFound(err):
		err = cp.Client.Create(ctx, u, strict)
	case err == nil:
		u.SetResourceVersion(cur.GetResourceVersion())
		err = cp.Client.Update(ctx, u, strict)
	}
	if err != nil {
		t.Fatalf("applying %s: %v", u.GetName(), err)
	}
}

// deployDiscovered is the documented path from a pool to its runtime:
// discover --fabric gib -o values, rendered with render runtime --fabric
// gib --machine-type mt --values, applied. It returns the values.
func deployDiscovered(t *testing.T, ctx context.Context, mt, selector string) string {
	t.Helper()
	code, vals, errs := runCLI(t, "discover", "--fabric", "gib", "--node-selector", selector, "-o", "values")
	if code != 0 || !strings.HasPrefix(vals, "rdmaInterfaces:\n") {
		t.Fatalf("discover --fabric gib -o values: exit %d, want 0 and rdmaInterfaces:\n%s%s", code, vals, errs)
	}
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, []byte(vals), 0o600); err != nil {
		t.Fatal(err)
	}
	code, rendered, errs := runOffline(t, "render", "runtime", "--fabric", "gib", "--machine-type", mt, "--values", file)
	if code != 0 {
		t.Fatalf("render runtime --fabric gib --machine-type %s --values (discover's): exit %d\n%s", mt, code, errs)
	}
	// --from-cluster is discover and render in one step, from the nodes of
	// the machine type the runtime selects.
	code, fromCluster, errs := runCLI(t, "render", "runtime", "--fabric", "gib", "--machine-type", mt, "--from-cluster", "--node-selector", selector)
	if code != 0 || !strings.Contains(errs, "render: --from-cluster: ") {
		t.Fatalf("render runtime --fabric gib --from-cluster: exit %d\n%s", code, errs)
	}
	if withSelector, err := renderWithSelector(t, mt, file, selector); err != nil || fromCluster != withSelector {
		t.Errorf("render runtime --fabric gib --from-cluster differs from discover -o values rendered with the same --node-selector (%v)", err)
	}
	applyRuntimeYAML(t, ctx, []byte(rendered))
	return vals
}

// renderWithSelector renders mt's runtime from the values file with
// --node-selector selector, as --from-cluster with it does.
func renderWithSelector(t *testing.T, mt, values, selector string) (string, error) {
	t.Helper()
	code, out, errs := runOffline(t, "render", "runtime", "--fabric", "gib", "--machine-type", mt, "--values", values, "--node-selector", selector)
	if code != 0 {
		return "", fmt.Errorf("exit %d: %s", code, errs)
	}
	return out, nil
}

// refusedBoth runs discover and check cluster with args and wants both
// refused: exit 1, nothing on stdout (no mapping to pipe on, no verdict),
// and every phrase of want on stderr.
func refusedBoth(t *testing.T, args []string, want ...string) {
	t.Helper()
	for _, cmd := range [][]string{{"discover"}, {"check", "cluster"}} {
		full := append(slices.Clone(cmd), args...)
		code, out, errs := runCLI(t, full...)
		if code != 1 || out != "" {
			t.Errorf("%s: exit %d, stdout %q; want 1 and nothing printed\n%s", strings.Join(full, " "), code, out, errs)
		}
		for _, w := range want {
			if !strings.Contains(errs, w) {
				t.Errorf("%s's refusal does not say %q:\n%s", strings.Join(full, " "), w, errs)
			}
		}
	}
}

// checkClusterGIB runs check cluster --fabric gib -v (every finding,
// the passing ones too) on the nodes selector selects.
func checkClusterGIB(t *testing.T, selector string) (int, string, string) {
	t.Helper()
	return runCLI(t, "check", "cluster", "--fabric", "gib", "--node-selector", selector, "-v")
}

// failLines are the FAIL findings check cluster printed.
func failLines(out string) []string {
	var fails []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "FAIL ") {
			fails = append(fails, l)
		}
	}
	return fails
}

// TestDiscoverAndCheckClusterGIB runs `discover --fabric gib` and `check
// cluster --fabric gib` through the CLI against pools of simulated A3
// Ultra and A4 nodes in GKE's published formats (issue 35): healthy pools
// pass with the runtime rendered from what discover prints deployed,
// discover follows the host NICs whatever the networks are named, and
// every misprovisioning and every pool of the wrong machine type or
// attachment mode is refused, naming the node and the value.
func TestDiscoverAndCheckClusterGIB(t *testing.T) {
	ctx := context.Background()
	start := time.Now()

	for _, mt := range fabric.GIB.MachineTypeNames() {
		t.Run("healthy "+mt+" pool", func(t *testing.T) {
			keepGIBRuntime(t, ctx, mt)
			pool := gibPoolOf(t, "cc-healthy-"+mt, mt)
			nodes := addClusterPool(t, ctx, pool)
			googleGIB(t, ctx, nodes)
			sel := poolSelector(pool.Name)
			code, out, errs := runCLI(t, "discover", "--fabric", "gib", "--node-selector", sel)
			if code != 0 || strings.TrimSpace(out) != gibGoogleMapping {
				t.Fatalf("discover --fabric gib: exit %d, %q, want %s\n%s", code, out, gibGoogleMapping, errs)
			}
			vals := deployDiscovered(t, ctx, mt, sel)
			for _, w := range []string{`{interfaceName: eth1, network: "gvnic-1"}`, `{interfaceName: eth2, network: "rdma-0"}`, `{interfaceName: eth9, network: "rdma-7"}`} {
				if !strings.Contains(vals, w) {
					t.Errorf("discover -o values does not carry %s:\n%s", w, vals)
				}
			}
			code, out, errs = checkClusterGIB(t, sel)
			if code != 0 || !strings.Contains(out, "check cluster: PASS") {
				t.Fatalf("check cluster --fabric gib on a healthy %s pool: exit %d\n%s%s", mt, code, out, errs)
			}
			// -v prints the passing findings: each is the gIB one, on this
			// pool's nodes.
			for _, w := range []string{
				"ok   topology " + nodes[0] + ": eight RDMA NICs on eight PCI slots: " + gibGoogleMapping,
				"ok   installer " + nodes[1] + ": installer v",
				"ok   runtime: the deployed " + fabric.GIB.RuntimeFor(mt) + " carries the wiring " + gibGoogleMapping + " renders",
				"ok   gke-version " + nodes[0] + ": GKE " + gibKubelet + ", at or above",
			} {
				if !strings.Contains(out, w) {
					t.Errorf("check cluster -v does not say %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "nccl-tcpxo-installer") || strings.Contains(out, "tcpxo-daemon") || strings.Contains(out, "gke-a3-mega") {
				t.Errorf("check cluster --fabric gib judged TCPXO's components or the A3 Mega nodes:\n%s", out)
			}
		})
	}

	t.Run("RDMA network names not in NIC order", func(t *testing.T) {
		const mt = "a3-ultragpu-8g"
		keepGIBRuntime(t, ctx, mt)
		pool := gibPoolOf(t, "cc-order", mt)
		nodes := addClusterPool(t, ctx, pool)
		nets := []string{"rdma-3", "rdma-0", "rdma-7", "rdma-1", "rdma-5", "rdma-2", "rdma-6", "rdma-4"}
		provisionGIB(t, ctx, nets, []string{gibGVNIC}, nodes, func(string) []harness.HostNIC { return harness.RDMANICs(gibGVNIC, nets) })
		sel := poolSelector(pool.Name)
		want := "eth1=gvnic-1,eth2=rdma-3,eth3=rdma-0,eth4=rdma-7,eth5=rdma-1,eth6=rdma-5,eth7=rdma-2,eth8=rdma-6,eth9=rdma-4"
		code, out, errs := runCLI(t, "discover", "--fabric", "gib", "--node-selector", sel)
		if code != 0 || strings.TrimSpace(out) != want {
			t.Fatalf("discover --fabric gib: exit %d, %q, want %s (the host NICs' order, not the names')\n%s", code, out, want, errs)
		}
		// The golden carries its example networks in Google's order (eth2=rdma-0,
		// ..., nothing on eth1): deployed on
		// this pool it would give each pod interface another NIC's network,
		// and check cluster says so and how to redeploy.
		golden, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(runtimes.GoldenRDMARuntime(mt))))
		if err != nil {
			t.Fatal(err)
		}
		applyRuntimeYAML(t, ctx, golden)
		code, out, errs = checkClusterGIB(t, sel)
		if code != 1 {
			t.Errorf("check cluster with the golden deployed on a pool in another order: exit %d, want 1\n%s%s", code, out, errs)
		}
		for _, w := range []string{
			"FAIL runtime: the deployed " + fabric.GIB.RuntimeFor(mt) + " differs from what " + want + " renders",
			"tcpxogen render runtime --fabric gib --machine-type " + mt + " --interfaces " + want,
			"check cluster: FAIL (1 failed",
		} {
			if !strings.Contains(out, w) {
				t.Errorf("check cluster does not say %q:\n%s", w, out)
			}
		}
		deployDiscovered(t, ctx, mt, sel)
		if code, out, errs := checkClusterGIB(t, sel); code != 0 || !strings.Contains(out, "check cluster: PASS") {
			t.Errorf("check cluster with the runtime rendered from discover: exit %d\n%s%s", code, out, errs)
		}
	})

	refused := []struct {
		name string
		// rdma and netDevice are the networks provisioned; nics each node's
		// NICs by index in the pool.
		rdma, netDevice []string
		nics            func(i int) []harness.HostNIC
		// want are phrases of discover's refusal; node is the index of the
		// node it names (-1: every node).
		want []string
		node int
	}{
		{name: "two RDMA NICs sharing a PCI slot", rdma: gibRDMANetworks, netDevice: []string{gibGVNIC},
			nics: func(i int) []harness.HostNIC {
				nics := harness.RDMANICs(gibGVNIC, gibRDMANetworks)
				if i == 1 {
					// eth4 reports eth3's slot.
					nics[4].PCI = nics[3].PCI
				}
				return nics
			},
			want: []string{`RDMA NIC eth3 has PCI address "0000:92:00.0", not a slot of its own`, `RDMA NIC eth4 has PCI address "0000:92:00.0"`}, node: 1},
		{name: "a gVNIC in an RDMA NIC's slot", rdma: gibRDMANetworks[1:], netDevice: []string{gibGVNIC, "gvnic-net"},
			nics: func(int) []harness.HostNIC {
				nics := harness.RDMANICs(gibGVNIC, gibRDMANetworks)
				// A gVNIC additional network on eth2's slot, rdma-0 gone.
				nics[2] = harness.HostNIC{Name: "gve0", Network: "gvnic-net", IP: "172.16.0.2", PCI: nics[2].PCI}
				return nics
			},
			want: []string{"network gvnic-net sits on host NIC gve0 (0000:91:00.0), which is not an RDMA NIC (eth2..eth9, or eth1)", "no RDMA-NIC network sits on host NIC eth2"}, node: -1},
		{name: "seven RDMA networks", rdma: gibRDMANetworks[:7], netDevice: []string{gibGVNIC},
			nics: func(int) []harness.HostNIC { return harness.RDMANICs(gibGVNIC, gibRDMANetworks[:7]) },
			want: []string{"advertises 7 RDMA-NIC networks", "besides gvnic-1 on eth1, not 8"}, node: -1},
	}
	for i, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			pool := gibPoolOf(t, fmt.Sprintf("cc-refused-%d", i), "a3-ultragpu-8g")
			nodes := addClusterPool(t, ctx, pool)
			provisionGIB(t, ctx, c.rdma, c.netDevice, nodes, func(n string) []harness.HostNIC { return c.nics(slices.Index(nodes, n)) })
			sel := poolSelector(pool.Name)
			code, out, errs := runCLI(t, "discover", "--fabric", "gib", "--node-selector", sel)
			if code != 1 || out != "" {
				t.Errorf("discover --fabric gib: exit %d, stdout %q; want 1 and nothing printed", code, out)
			}
			named := nodes
			if c.node >= 0 {
				named = nodes[c.node : c.node+1]
				if strings.Contains(errs, "node "+nodes[1-c.node]+":") {
					t.Errorf("discover names the healthy node %s:\n%s", nodes[1-c.node], errs)
				}
			}
			for _, w := range append(slices.Clone(c.want), named...) {
				if !strings.Contains(errs, w) {
					t.Errorf("discover's refusal does not say %q:\n%s", w, errs)
				}
			}
			code, out, errs = checkClusterGIB(t, sel)
			if code != 1 || !strings.Contains(out, "check cluster: FAIL") {
				t.Errorf("check cluster --fabric gib: exit %d, want 1 and FAIL\n%s%s", code, out, errs)
			}
			for _, n := range named {
				if !strings.Contains(out, "FAIL topology "+n+": ") {
					t.Errorf("check cluster does not fail the topology of %s:\n%s", n, out)
				}
			}
			t.Logf("discover:\n%scheck cluster:\n%s", errs, strings.Join(failLines(out), "\n"))
		})
	}

	t.Run("a drifted gIB installer on one node", func(t *testing.T) {
		keepGIBRuntime(t, ctx, "a3-ultragpu-8g")
		pool := gibPoolOf(t, "cc-drift", "a3-ultragpu-8g")
		nodes := addClusterPool(t, ctx, pool)
		googleGIB(t, ctx, nodes)
		sel := poolSelector(pool.Name)
		deployDiscovered(t, ctx, pool.InstanceType, sel)
		ref, err := bom.ParsePinned(pinnedGIBInstaller(t))
		if err != nil {
			t.Fatal(err)
		}
		// The installer's repository at a release the BOM does not pin, by
		// digest: a node pool upgraded on its own.
		drifted := ref.Repository() + ":v9.9.9@sha256:" + strings.Repeat("a", 64)
		if err := cp.SetInstallerPodOf(ctx, fabric.GIB.InstallerDaemonSet, nodes[1], drifted); err != nil {
			t.Fatal(err)
		}
		code, out, errs := checkClusterGIB(t, sel)
		if code != 1 {
			t.Errorf("check cluster: exit %d, want 1\n%s%s", code, out, errs)
		}
		for _, w := range []string{
			"FAIL installer " + nodes[1] + ": the node runs installer v9.9.9, but bom/bom.yaml pins",
			"role gibInstaller",
			"FAIL installer: the nodes run different installers: ",
			drifted + " on " + nodes[1],
			"check cluster: FAIL (2 failed",
		} {
			if !strings.Contains(out, w) {
				t.Errorf("check cluster does not say %q:\n%s", w, out)
			}
		}
		if strings.Contains(out, "FAIL installer "+nodes[0]+":") {
			t.Errorf("the node with the pinned installer fails:\n%s", out)
		}
	})

	// The GKE floors of GPUDirect RDMA per machine type, as Google's
	// "Create a custom AI-optimized GKE cluster which uses A4 or A3 Ultra"
	// publishes them: a node one patch below fails naming the floor, and
	// nothing else fails.
	for _, c := range []struct{ mt, floor, below string }{
		{"a3-ultragpu-8g", "1.31.4-gke.1183000", "v1.31.4-gke.1182000"},
		{"a4-highgpu-8g", "1.32.2-gke.1475000", "v1.32.2-gke.1474000"},
	} {
		t.Run(c.mt+" below its GKE floor", func(t *testing.T) {
			keepGIBRuntime(t, ctx, c.mt)
			pool := gibPoolOf(t, "cc-floor-"+c.mt, c.mt)
			pool.KubeletVersion = c.below
			nodes := addClusterPool(t, ctx, pool)
			googleGIB(t, ctx, nodes)
			sel := poolSelector(pool.Name)
			// discover reads NICs, not versions: the mapping is there.
			deployDiscovered(t, ctx, c.mt, sel)
			code, out, errs := checkClusterGIB(t, sel)
			if code != 1 {
				t.Errorf("check cluster: exit %d, want 1\n%s%s", code, out, errs)
			}
			for _, n := range nodes {
				w := "FAIL gke-version " + n + ": GKE " + c.below + " is below " + c.floor + ", which GPUDirect-RDMA"
				if !strings.Contains(out, w) || !strings.Contains(out, "on "+c.mt+" needs (Google, Create a custom AI-optimized GKE cluster which uses A4 or A3 Ultra)") {
					t.Errorf("check cluster does not say %q on %s with its source:\n%s", w, c.mt, out)
				}
			}
			for _, l := range failLines(out) {
				if !strings.HasPrefix(l, "FAIL gke-version ") {
					t.Errorf("a pool healthy but for its GKE version fails another check: %s", l)
				}
			}
		})
	}

	t.Run("a managed DRANET pool", func(t *testing.T) {
		pool := gibPoolOf(t, "cc-dranet", "a3-ultragpu-8g")
		// GKE labels the nodes of a pool set up for managed DRANET
		// (gib-facts, cluster facts: Google's managed DRANET documentation).
		pool.Labels = map[string]string{"cloud.google.com/gke-networking-dra-driver": "true"}
		nodes := addClusterPool(t, ctx, pool)
		// Healthy otherwise: only the attachment mode is refused.
		googleGIB(t, ctx, nodes)
		refusedBoth(t, []string{"--fabric", "gib", "--node-selector", poolSelector(pool.Name)},
			"2 nodes ("+strings.Join(nodes, ", ")+") are labelled cloud.google.com/gke-networking-dra-driver=true",
			"managed DRANET", "mutually exclusive", "DeviceClass mrdma.google.com")
	})

	t.Run("an A3 High pool", func(t *testing.T) {
		// A3 High shares A3 Edge's accelerator label and uses GPUDirect-TCPX
		// (gib-facts, cluster facts: AICR #2290).
		nodes := addClusterPool(t, ctx, harness.Pool{Name: "cc-a3-high", InstanceType: "a3-highgpu-8g", Accelerator: "nvidia-h100-80gb", Nodes: 2})
		for _, f := range fabric.Names() {
			refusedBoth(t, []string{"--fabric", f, "--node-selector", poolSelector("cc-a3-high")},
				"machine type a3-highgpu-8g: A3 High uses GPUDirect-TCPX (4 GPU NICs)", strings.Join(nodes, ", "))
		}
	})

	t.Run("a pool mixing A3 Mega and A3 Ultra nodes", func(t *testing.T) {
		const mix = "e2e.tcpxogen.dev/mix"
		mega := addClusterPool(t, ctx, harness.Pool{Name: "cc-mix-mega", InstanceType: harness.InstanceType, Accelerator: harness.Accelerator, Nodes: 1, Labels: map[string]string{mix: "true"}})
		ultra := gibPoolOf(t, "cc-mix-ultra", "a3-ultragpu-8g")
		ultra.Labels = map[string]string{mix: "true"}
		nodes := addClusterPool(t, ctx, ultra)
		for _, f := range fabric.Names() {
			refusedBoth(t, []string{"--fabric", f, "--node-selector", mix + "=true"},
				"the target nodes mix machine types",
				"node.kubernetes.io/instance-type=a3-megagpu-8g on 1 node ("+mega[0]+")",
				"node.kubernetes.io/instance-type=a3-ultragpu-8g on 2 nodes ("+strings.Join(nodes, ", ")+")")
		}
	})

	t.Run("a fabric aimed at the other fabric's machine type", func(t *testing.T) {
		pool := gibPoolOf(t, "cc-cross", "a3-ultragpu-8g")
		nodes := addClusterPool(t, ctx, pool)
		googleGIB(t, ctx, nodes)
		sel := poolSelector(pool.Name)
		refusedBoth(t, []string{"--fabric", "tcpxo", "--node-selector", sel},
			"--fabric tcpxo", "these nodes are a3-ultragpu-8g", "served by gib", "run with --fabric gib")
		// --fabric defaults to tcpxo: plain discover is refused alike.
		if code, out, errs := runCLI(t, "discover", "--node-selector", sel); code != 1 || out != "" || !strings.Contains(errs, "--fabric tcpxo") || !strings.Contains(errs, "a3-ultragpu-8g") {
			t.Errorf("discover (TCPXO by default) on an A3 Ultra pool: exit %d, stdout %q\n%s", code, out, errs)
		}
		refusedBoth(t, []string{"--fabric", "gib", "--node-selector", harness.AcceleratorLabel + "=" + harness.Accelerator},
			"--fabric gib", "these nodes are a3-megagpu-8g", "served by tcpxo", "run with --fabric tcpxo")
	})
	t.Logf("gIB discover and check cluster rows in %s", time.Since(start).Round(100*time.Millisecond))
}

// TestDiscoverAndCheckClusterGIBUnderTheirRoles runs discover --fabric gib
// and check cluster --fabric gib as ServiceAccounts bound to exactly what
// `render rbac --for discover|check-cluster` prints: the gIB reads (the
// RDMA networks, the nccl-rdma-installer pods, the gIB runtime of the
// pool's machine type) are within them, and both pass; with any rule they
// read cut they fail naming it (as TCPXO's runs, issue 25). No TrainJob
// runs on the pool here, so check cluster lists the TrainJobs but reads no
// snapshot ConfigMap and no benchmark runtime: those two rules are held to
// be unread instead (TCPXO's role test submits TrainJobs and needs them).
func TestDiscoverAndCheckClusterGIBUnderTheirRoles(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	const mt = "a3-ultragpu-8g"
	// A DRANET DeviceClass whose driver publishes nothing on the pool:
	// both DRANET reads are made, and the pool still passes.
	dranetDeviceClass(t, ctx, "mrdma.roles.example.com")
	keepGIBRuntime(t, ctx, mt)
	pool := gibPoolOf(t, "cc-roles", mt)
	nodes := addClusterPool(t, ctx, pool)
	googleGIB(t, ctx, nodes)
	sel := poolSelector(pool.Name)
	deployDiscovered(t, ctx, mt, sel)
	const ns = "kube-system"
	for _, c := range []struct {
		list string
		args []string
		want string
	}{
		{"discover", []string{"discover", "--fabric", "gib", "--node-selector", sel}, gibGoogleMapping + "\n"},
		{"check-cluster", []string{"check", "cluster", "--fabric", "gib", "--node-selector", sel}, "check cluster: PASS"},
	} {
		t.Run(c.list, func(t *testing.T) {
			objs := renderRBAC(t, "--for", c.list, "--namespace", ns)
			applyRBAC(t, ctx, objs)
			kc := filepath.Join(t.TempDir(), "kubeconfig")
			if err := cp.ServiceAccountKubeconfig(ctx, ns, "tcpxogen-"+c.list, kc); err != nil {
				t.Fatal(err)
			}
			if code, out, errs := runOffline(t, append(c.args, "--kubeconfig", kc)...); code != 0 || !strings.Contains(out, c.want) {
				t.Fatalf("%s under its own role: exit %d, want 0 and %q\n%s%s", strings.Join(c.args, " "), code, c.want, out, errs)
			}
			eachRuleNeeded(t, ctx, c.list, ns, objs, kc, c.args, func(r rbacv1.PolicyRule) bool {
				return slices.ContainsFunc(r.Resources, func(res string) bool {
					return res == "configmaps" || res == "trainingruntimes"
				})
			})
			if c.list == "check-cluster" {
				runtimeNameNeeded(t, ctx, ns, objs, kc, c.args, fabric.GIB.RuntimeFor(mt))
			}
		})
	}
	t.Logf("gIB runs under their roles in %s", time.Since(start).Round(100*time.Millisecond))
}

// runtimeNameNeeded cuts name alone from the resourceNames of the rule of
// objs (render rbac --for check-cluster) that grants get
// clustertrainingruntimes: check cluster (args, run with kc) is refused
// reading that runtime, and says so; objs are applied again at the end.
// The role grants the deployed runtimes by name, so a gIB runtime missing
// from its list would fail every gIB pool's check.
func runtimeNameNeeded(t *testing.T, ctx context.Context, ns string, objs []*unstructured.Unstructured, kc string, args []string, name string) {
	t.Helper()
	cut := renderRBAC(t, "--for", "check-cluster", "--namespace", ns)
	found := false
	for _, o := range cut {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		rs := rules(t, o)
		for j := range rs {
			if !slices.Contains(rs[j].Resources, "clustertrainingruntimes") {
				continue
			}
			if !slices.Contains(rs[j].ResourceNames, name) {
				t.Fatalf("the check-cluster role does not grant %s: %v", name, rs[j].ResourceNames)
			}
			rs[j].ResourceNames = slices.DeleteFunc(rs[j].ResourceNames, func(n string) bool { return n == name })
			found = true
		}
		if err := unstructured.SetNestedField(o.Object, toAny(t, rs), "rules"); err != nil {
			t.Fatal(err)
		}
	}
	if !found {
		t.Fatal("the check-cluster role has no rule on clustertrainingruntimes")
	}
	applyRBAC(t, ctx, cut)
	var code int
	var errs string
	waited := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		code, _, errs = runOffline(t, append(args, "--kubeconfig", kc)...)
		return code != 0, nil
	})
	if code == 0 {
		t.Errorf("check cluster --fabric gib passed without get on %s (after waiting: %v)", name, waited)
	}
	for _, w := range []string{"the API server refused", "reading ClusterTrainingRuntime " + name} {
		if !strings.Contains(errs, w) {
			t.Errorf("without get on %s, check cluster does not say %q:\n%s", name, w, errs)
		}
	}
	t.Logf("without get on %s: %s", name, lastLines(errs, 3))
	applyRBAC(t, ctx, objs)
}
