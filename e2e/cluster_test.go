package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/e2e/harness"
)

// runCLI runs the shipped CLI with the control plane's admin kubeconfig.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runOffline(t, append(args, "--kubeconfig", kubeconfig(t))...)
}

// runOffline runs the shipped CLI as given.
func runOffline(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(tcpxogenBinary(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// pinnedInstaller is the installer bom/bom.yaml pins.
func pinnedInstaller(t *testing.T) string {
	t.Helper()
	b, _, _, err := bom.LoadEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	return b.Images.Installer.Reference
}

// driftedInstaller is the installer's repository at a version the BOM does
// not pin, by digest: a node pool upgraded on its own.
func driftedInstaller(t *testing.T) string {
	t.Helper()
	b, _, _, err := bom.LoadEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	ref, err := bom.ParsePinned(b.Images.Installer.Reference)
	if err != nil {
		t.Fatal(err)
	}
	return ref.Repository() + ":v9.9.9@sha256:" + strings.Repeat("a", 64)
}

// provision makes every simulated node carry nicsOf(node) as GKE publishes
// it, the networks as Ready Device networks, and the pinned installer.
func provision(t *testing.T, ctx context.Context, networks []string, nicsOf func(node string) []harness.HostNIC) {
	t.Helper()
	if err := cp.AttachNetworks(ctx, networks); err != nil {
		t.Fatal(err)
	}
	if err := cp.MarkNetworksReady(ctx, networks); err != nil {
		t.Fatal(err)
	}
	for _, n := range cp.Nodes.NodeNames() {
		if err := cp.SetNodeNICs(ctx, n, nicsOf(n)); err != nil {
			t.Fatal(err)
		}
		if err := cp.SetInstallerPod(ctx, n, pinnedInstaller(t)); err != nil {
			t.Fatal(err)
		}
	}
}

// displaced is a node whose pool carries a gVNIC additional network on the
// GPU-NIC slot 0000:06:00.0 (AICR PR #420): gve0 there, eth2..eth8 carrying
// seven of the networks.
func displaced(networks []string) []harness.HostNIC {
	nics := harness.A3MegaNICs(networks)
	nics[1] = harness.HostNIC{Name: "gve0", Network: "gvnic-net", IP: "172.16.0.2", PCI: nics[1].PCI}
	return nics
}

// TestDiscoverAndCheckCluster runs `discover` and `check cluster` against
// nodes in GKE's published formats (gke-networking-api's annotation types
// and extended-resource names): a healthy pool, one whose network names do
// not sort in NIC order, and every misprovisioning issue 20 names.
func TestDiscoverAndCheckCluster(t *testing.T) {
	ctx := context.Background()
	installShippedRuntime(t, ctx)
	nodes := cp.Nodes.NodeNames()
	if len(nodes) < 2 {
		t.Fatalf("the simulator registered %d nodes; the scenarios need two", len(nodes))
	}
	vpcs := []string{"vpc1", "vpc2", "vpc3", "vpc4", "vpc5", "vpc6", "vpc7", "vpc8"}
	t.Cleanup(func() {
		// Leave the nodes as the other scenarios expect them.
		provision(t, ctx, exampleNetworks(), func(string) []harness.HostNIC { return harness.A3MegaNICs(exampleNetworks()) })
	})
	healthy := func(string) []harness.HostNIC { return harness.A3MegaNICs(vpcs) }

	t.Run("healthy pool", func(t *testing.T) {
		provision(t, ctx, vpcs, healthy)
		code, out, errs := runCLI(t, "discover")
		if code != 0 || strings.TrimSpace(out) != "eth1=vpc1,eth2=vpc2,eth3=vpc3,eth4=vpc4,eth5=vpc5,eth6=vpc6,eth7=vpc7,eth8=vpc8" {
			t.Fatalf("discover: exit %d, %q\n%s", code, out, errs)
		}
		if code, _, errs := runOffline(t, "render", "runtime", "--interfaces", strings.TrimSpace(out)); code != 0 {
			t.Errorf("render runtime refuses what discover printed: exit %d\n%s", code, errs)
		}
		code, vals, errs := runCLI(t, "discover", "-o", "values")
		if code != 0 || !strings.Contains(vals, "tcpxoInterfaces:") {
			t.Fatalf("discover -o values: exit %d\n%s%s", code, vals, errs)
		}
		code, out, errs = runCLI(t, "check", "cluster")
		if code != 0 || !strings.Contains(out, "check cluster: PASS") {
			t.Errorf("check cluster on a healthy pool: exit %d\n%s%s", code, out, errs)
		}
	})

	t.Run("names that do not sort in NIC order", func(t *testing.T) {
		nets := []string{"zeta", "alpha", "mike", "bravo", "yankee", "charlie", "x-ray", "delta"}
		provision(t, ctx, nets, func(string) []harness.HostNIC { return harness.A3MegaNICs(nets) })
		code, out, errs := runCLI(t, "discover")
		want := "eth1=zeta,eth2=alpha,eth3=mike,eth4=bravo,eth5=yankee,eth6=charlie,eth7=x-ray,eth8=delta"
		if code != 0 || strings.TrimSpace(out) != want {
			t.Errorf("discover: exit %d, %q, want %s\n%s", code, out, want, errs)
		}
		// render runtime --from-cluster is discover and render in one step.
		code, fromCluster, errs := runCLI(t, "render", "runtime", "--from-cluster")
		if code != 0 || !strings.Contains(errs, "--from-cluster: "+want) {
			t.Fatalf("render runtime --from-cluster: exit %d\n%s", code, errs)
		}
		code, byHand, errs := runOffline(t, "render", "runtime", "--interfaces", want)
		if code != 0 {
			t.Fatalf("render runtime --interfaces %s: exit %d\n%s", want, code, errs)
		}
		if fromCluster != byHand {
			t.Errorf("render runtime --from-cluster differs from render runtime --interfaces %s", want)
		}
	})

	refused := []struct {
		name  string
		nets  []string
		nics  func(node string) []harness.HostNIC
		tweak func(t *testing.T)
		want  []string
	}{
		{name: "a displaced slot on one node", nets: append(vpcs, "gvnic-net"),
			nics: func(n string) []harness.HostNIC {
				if n == nodes[1] {
					return displaced(vpcs)
				}
				return harness.A3MegaNICs(vpcs)
			},
			want: []string{nodes[1], "gvnic-net sits on host NIC gve0 (0000:06:00.0), which is not a GPU NIC"}},
		{name: "a displaced slot on every node", nets: append(vpcs, "gvnic-net"),
			nics: func(string) []harness.HostNIC { return displaced(vpcs) },
			want: []string{nodes[0], nodes[1], "gve0"}},
		{name: "seven networks", nets: vpcs[:7], nics: func(string) []harness.HostNIC { return harness.A3MegaNICs(vpcs[:7]) },
			want: []string{"advertises 7 GPU-NIC networks"}},
		{name: "nine networks", nets: append(vpcs, "vpc9"), nics: func(string) []harness.HostNIC {
			return append(harness.A3MegaNICs(vpcs), harness.HostNIC{Name: "eth9", Network: "vpc9", IP: "192.168.9.2", PCI: "0000:90:00.0"})
		}, want: []string{"advertises 9 GPU-NIC networks"}},
		{name: "nodes that disagree", nets: vpcs, nics: func(n string) []harness.HostNIC {
			nics := harness.A3MegaNICs(vpcs)
			if n == nodes[1] {
				nics[1].Network, nics[2].Network = nics[2].Network, nics[1].Network
			}
			return nics
		}, want: []string{"disagree", "eth1=vpc2,eth2=vpc1"}},
		{name: "a missing annotation", nets: vpcs, nics: healthy, tweak: func(t *testing.T) {
			if err := cp.SetNodeAnnotations(ctx, nodes[0], map[string]*string{networkv1.NICInfoAnnotationKey: nil}); err != nil {
				t.Fatal(err)
			}
		}, want: []string{nodes[0], "but no " + networkv1.NICInfoAnnotationKey}},
		// One unverified node beside verified ones is only a warning; a pool
		// where no node shows its NICs has had nothing checked.
		{name: "no node shows its NICs", nets: vpcs, nics: healthy, tweak: func(t *testing.T) {
			for _, n := range nodes {
				if err := cp.SetNodeAnnotations(ctx, n, map[string]*string{networkv1.NICInfoAnnotationKey: nil, networkv1.NorthInterfacesAnnotationKey: nil}); err != nil {
					t.Fatal(err)
				}
			}
		}, want: []string{nodes[0], "has neither " + networkv1.NorthInterfacesAnnotationKey}},
		{name: "a malformed annotation", nets: vpcs, nics: healthy, tweak: func(t *testing.T) {
			bad := `[{"network": "vpc1", "ipAddress": `
			if err := cp.SetNodeAnnotations(ctx, nodes[1], map[string]*string{networkv1.NorthInterfacesAnnotationKey: &bad}); err != nil {
				t.Fatal(err)
			}
		}, want: []string{nodes[1], networkv1.NorthInterfacesAnnotationKey + " is not GKE's JSON list"}},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			provision(t, ctx, c.nets, c.nics)
			if c.tweak != nil {
				c.tweak(t)
			}
			code, out, errs := runCLI(t, "discover")
			if code != 1 || out != "" {
				t.Errorf("discover: exit %d, stdout %q; want 1 and nothing printed", code, out)
			}
			for _, w := range c.want {
				if !strings.Contains(errs, w) {
					t.Errorf("discover's refusal does not say %q:\n%s", w, errs)
				}
			}
			if code, out, errs := runCLI(t, "render", "runtime", "--from-cluster"); code != 1 || out != "" || !strings.Contains(errs, "nothing rendered") {
				t.Errorf("render runtime --from-cluster: exit %d, stdout %d bytes; want 1 and nothing rendered\n%s", code, len(out), errs)
			}
			code, out, errs = runCLI(t, "check", "cluster")
			if code != 1 || !strings.Contains(out, "check cluster: FAIL") {
				t.Errorf("check cluster: exit %d\n%s%s", code, out, errs)
			}
			t.Logf("discover:\n%scheck cluster:\n%s", errs, out)
		})
	}

	for _, c := range []struct {
		name, image string
		want        []string
	}{
		{"an installer pod on another version on one node",
			driftedInstaller(t),
			[]string{"FAIL installer " + nodes[1], "runs installer v9.9.9", "the nodes run different installers"}},
		{"an installer image that is not digest-pinned",
			"us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.15",
			[]string{"FAIL installer " + nodes[1], "not pinned by digest"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			provision(t, ctx, vpcs, healthy)
			if err := cp.SetInstallerPod(ctx, nodes[1], c.image); err != nil {
				t.Fatal(err)
			}
			code, out, errs := runCLI(t, "check", "cluster")
			if code != 1 {
				t.Errorf("check cluster: exit %d, want 1\n%s%s", code, out, errs)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("check cluster does not say %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "FAIL installer "+nodes[0]+":") {
				t.Errorf("the node with the pinned installer fails:\n%s", out)
			}
		})
	}
}

// TestDiscoverAndCheckClusterUnderTheirRoles runs each command as a
// ServiceAccount bound to exactly what `render rbac --for COMMAND` prints:
// it passes; with any one rule removed it fails, naming the missing
// permission and the command that grants it (issue 25). A TrainJob of each
// shipped runtime exists, so check cluster makes every read its TrainJob
// check needs (their snapshots, the benchmark runtime).
func TestDiscoverAndCheckClusterUnderTheirRoles(t *testing.T) {
	ctx := context.Background()
	installShippedRuntime(t, ctx)
	submitShippedTrainJobs(t, ctx, "check-cluster-role")
	// A DRANET DeviceClass whose driver publishes nothing on the pool:
	// both DRANET reads are made, and the pool still passes.
	dranetDeviceClass(t, ctx, "mrdma.roles.example.com")
	vpcs := []string{"vpc1", "vpc2", "vpc3", "vpc4", "vpc5", "vpc6", "vpc7", "vpc8"}
	provision(t, ctx, vpcs, func(string) []harness.HostNIC { return harness.A3MegaNICs(vpcs) })
	t.Cleanup(func() {
		provision(t, ctx, exampleNetworks(), func(string) []harness.HostNIC { return harness.A3MegaNICs(exampleNetworks()) })
	})
	const ns = "kube-system"
	for _, c := range []struct {
		list string
		args []string
	}{{"discover", []string{"discover"}}, {"check-cluster", []string{"check", "cluster"}}} {
		t.Run(c.list, func(t *testing.T) {
			objs := renderRBAC(t, "--for", c.list, "--namespace", ns)
			applyRBAC(t, ctx, objs)
			kc := filepath.Join(t.TempDir(), "kubeconfig")
			if err := cp.ServiceAccountKubeconfig(ctx, ns, "tcpxogen-"+c.list, kc); err != nil {
				t.Fatal(err)
			}
			if code, out, errs := runOffline(t, append(c.args, "--kubeconfig", kc)...); code != 0 {
				t.Fatalf("%s under its own role: exit %d\n%s%s", c.list, code, out, errs)
			}
			eachRuleNeeded(t, ctx, c.list, ns, objs, kc, c.args, nil)
		})
	}
}

// saAllowed asks the authorizer (a SubjectAccessReview) whether
// ServiceAccount ns/name may do the first verb of r on its first resource
// (and first resource name), in namespace (cluster-wide for "").
func saAllowed(ctx context.Context, ns, name, namespace string, r rbacv1.PolicyRule) (bool, error) {
	attrs := &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: r.Verbs[0], Group: r.APIGroups[0], Resource: r.Resources[0]}
	if len(r.ResourceNames) > 0 {
		attrs.Name = r.ResourceNames[0]
	}
	sar, err := cp.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + ns + ":" + name,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		ResourceAttributes: attrs,
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
}

// eachRuleNeeded runs args (the command of render rbac's list) with kc,
// the kubeconfig of the ServiceAccount objs (render rbac --for list
// --namespace ns, applied) bind, once with each rule of its roles cut: it
// fails, naming the missing permission and the command that grants it.
// A rule unused says the command does not read is instead held to pass
// without it, once the authorizer denies it. objs are applied again at
// the end.
func eachRuleNeeded(t *testing.T, ctx context.Context, list, ns string, objs []*unstructured.Unstructured, kc string, args []string, unused func(rbacv1.PolicyRule) bool) {
	t.Helper()
	for i, o := range objs {
		if o.GetKind() != "ClusterRole" && o.GetKind() != "Role" {
			continue
		}
		for j := range rules(t, o) {
			cut := renderRBAC(t, "--for", list, "--namespace", ns)
			role := cut[i]
			rs := rules(t, role)
			removed := rs[j]
			rs = slices.Delete(rs, j, j+1)
			if err := unstructured.SetNestedField(role.Object, toAny(t, rs), "rules"); err != nil {
				t.Fatal(err)
			}
			applyRBAC(t, ctx, cut)
			// The authorizer reads roles through informers: poll until the
			// cut takes effect (and the rule cut before it is back).
			named := fmt.Sprintf("rule %q of its role", permission(removed))
			var code int
			var errs string
			if unused != nil && unused(removed) {
				// A pass proves nothing before the cut takes effect: wait
				// until the authorizer denies the ServiceAccount the rule.
				if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
					allowed, err := saAllowed(ctx, ns, "tcpxogen-"+list, role.GetNamespace(), removed)
					return !allowed, err
				}); err != nil {
					t.Fatalf("the cut of %s never took effect: %v", permission(removed), err)
				}
				if code, _, errs = runOffline(t, append(args, "--kubeconfig", kc)...); code != 0 {
					t.Errorf("%s fails without %s, which it does not read:\n%s", strings.Join(args, " "), permission(removed), errs)
				}
				continue
			}
			waited := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
				code, _, errs = runOffline(t, append(args, "--kubeconfig", kc)...)
				return code != 0 && strings.Contains(errs, named), nil
			})
			if code == 0 {
				t.Errorf("%s passed without %s (after waiting: %v)", list, permission(removed), waited)
				continue
			}
			for _, want := range []string{
				"the API server refused", named,
				"tcpxogen render rbac --for " + list + " --namespace " + ns + " | kubectl apply -f -",
			} {
				if !strings.Contains(errs, want) {
					t.Errorf("without %s, %s does not say %q:\n%s", permission(removed), list, want, errs)
				}
			}
			t.Logf("without %s: %s", permission(removed), lastLines(errs, 3))
		}
	}
	applyRBAC(t, ctx, objs)
}
