package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

// InstallerLabel selects the NCCL plugin installer's pods as the shipped
// components label them (runtimes/components.yaml).
const InstallerLabel = names.AppLabel + "=" + names.InstallerDaemonSet

// Level is how bad a finding is.
type Level string

const (
	Fail Level = "FAIL"
	Warn Level = "warn"
	OK   Level = "ok"
)

// Finding is one check on one node, or on the cluster ("" node).
type Finding struct {
	Level   Level  `json:"level"`
	Check   string `json:"check"`
	Node    string `json:"node,omitempty"`
	Message string `json:"message"`
}

func (f Finding) String() string {
	where := ""
	if f.Node != "" {
		where = " " + f.Node
	}
	return fmt.Sprintf("%-4s %s%s: %s", f.Level, f.Check, where, f.Message)
}

// State is what check cluster reads.
type State struct {
	Nodes    []corev1.Node
	Networks Networks
	// InstallerPods are the installer DaemonSet's pods (InstallerLabel).
	InstallerPods []corev1.Pod
	// DaemonImages are the tcpxo-daemon images of the deployed shipped
	// runtime; nil when it is not deployed.
	DaemonImages []string
	// Runtime is the deployed shipped ClusterTrainingRuntime as the API
	// server serves it; nil when it is not deployed.
	Runtime *unstructured.Unstructured
}

// Expect is what the cluster should match: the BOM, the release table and,
// when given, the recipe's mapping.
type Expect struct {
	BOM      *bom.BOM
	Releases *bom.Releases
	Mapping  interfaces.Mapping
}

// Check judges the cluster per node: its GPU-NIC topology, the installer
// running on it, and its GKE version against the release's floor. A node
// without GKE's NIC annotations is unverified (a warning); everything else
// that does not hold fails. A deployed shipped runtime labelled to skip the
// trainer's validating webhook (runtimes.WebhookValidationLabel) is a
// warning.
func Check(st State, want Expect) []Finding {
	var out []Finding
	add := func(l Level, check, node, format string, a ...any) {
		out = append(out, Finding{Level: l, Check: check, Node: node, Message: fmt.Sprintf(format, a...)})
	}
	if len(st.Nodes) == 0 {
		add(Fail, "nodes", "", "no node matches the selection; check --node-selector and the kubeconfig context")
		return out
	}
	nodes := slices.Clone(st.Nodes)
	slices.SortFunc(nodes, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })

	// Topology: each node on its own (a pool misprovisioned the same way on
	// every node leaves nothing to disagree), then against the recipe or
	// the other nodes.
	mappings := map[interfaces.Mapping][]string{}
	unverified := 0
	for i := range nodes {
		n := &nodes[i]
		nn, err := ReadNode(n)
		if errors.Is(err, ErrUnverified) {
			unverified++
			add(Warn, "topology", n.Name, "unverified: %v", err)
			continue
		}
		if err != nil {
			add(Fail, "topology", n.Name, "%v", err)
			continue
		}
		m, err := nn.Mapping()
		if err != nil {
			add(Fail, "topology", n.Name, "%v", err)
			continue
		}
		mappings[m] = append(mappings[m], n.Name)
		if !want.Mapping.IsZero() && m != want.Mapping {
			add(Fail, "topology", n.Name, "the GPU NICs carry %s, where the recipe maps %s: the runtime would attach each pod interface to another host NIC's network; fix the recipe (tcpxogen discover -o values) or the node pool", m, want.Mapping)
			continue
		}
		add(OK, "topology", n.Name, "eight GPU NICs on eight PCI slots: %s", m)
	}
	// Unverified nodes are warnings only beside nodes that were verified: a
	// pool where no node shows its NICs has had nothing checked, and a pass
	// there would vouch for a topology nobody read.
	if unverified == len(nodes) {
		add(Fail, "topology", "", "no target node's GPU-NIC topology could be verified (none carries %s and %s): nothing shows that the pods' eight networks reach eight GPU NICs; GKE writes both on multi-network nodes, so check that the node pool was created with the eight additional networks (--additional-node-network) and that --node-selector picks the A3 Mega nodes",
			networkv1.NorthInterfacesAnnotationKey, networkv1.NICInfoAnnotationKey)
	}
	if want.Mapping.IsZero() && len(mappings) > 1 {
		var lines []string
		for m, ns := range mappings {
			lines = append(lines, fmt.Sprintf("%s on %s", m, listNodes(ns)))
		}
		slices.Sort(lines)
		add(Fail, "topology", "", "the nodes disagree on which network sits on which GPU NIC: %s", strings.Join(lines, "; "))
	}
	var mapped []string
	for m := range mappings {
		for _, b := range m.Bindings() {
			if !slices.Contains(mapped, b.Network) {
				mapped = append(mapped, b.Network)
			}
		}
	}
	slices.Sort(mapped)
	for _, p := range NetworkProblems(mapped, st.Networks) {
		add(Fail, "networks", "", "%s", p)
	}

	out = append(out, checkInstaller(nodes, st, want)...)
	out = append(out, checkFloors(nodes, want)...)
	if st.Runtime != nil {
		out = append(out, webhookFindings(st.Runtime)...)
	}
	return out
}

// checkInstaller holds the installer pod on every target node to the BOM's
// pin: digest-pinned, the same on every node, and the pinned image; and the
// deployed runtime's daemon to the installer's published pair.
func checkInstaller(nodes []corev1.Node, st State, want Expect) []Finding {
	var out []Finding
	add := func(l Level, node, format string, a ...any) {
		out = append(out, Finding{Level: l, Check: "installer", Node: node, Message: fmt.Sprintf(format, a...)})
	}
	pin := want.BOM.Images.Installer.Reference
	byImage := map[string][]string{}
	for _, n := range nodes {
		i := slices.IndexFunc(st.InstallerPods, func(p corev1.Pod) bool { return p.Spec.NodeName == n.Name })
		if i < 0 {
			add(Fail, n.Name, "no installer pod (%s) runs on the node: the plugin is not installed there; apply tcpxogen render components", InstallerLabel)
			continue
		}
		img, ok := containerImage(st.InstallerPods[i].Spec.InitContainers, names.InstallerContainer)
		if !ok {
			add(Fail, n.Name, "installer pod %s has no %s init container", st.InstallerPods[i].Name, names.InstallerContainer)
			continue
		}
		byImage[img] = append(byImage[img], n.Name)
		ref, err := bom.ParsePinned(img)
		switch {
		case err != nil:
			add(Fail, n.Name, "the installer image %s is not pinned by digest (%v): a tag can move, so what the node installed is unknown; deploy tcpxogen render components", img, err)
		case img != pin:
			add(Fail, n.Name, "the node runs installer %s, but bom/bom.yaml pins %s (%s): node pools upgrade separately; upgrade the installer DaemonSet to the pin (tcpxogen render components)", ref.Tag(), want.BOM.Images.Installer.Version, pin)
		default:
			add(OK, n.Name, "installer %s, as pinned", ref.Tag())
		}
	}
	if len(byImage) > 1 {
		var lines []string
		for img, ns := range byImage {
			lines = append(lines, fmt.Sprintf("%s on %s", img, listNodes(ns)))
		}
		slices.Sort(lines)
		add(Fail, "", "the nodes run different installers: %s", strings.Join(lines, "; "))
	}
	if st.DaemonImages == nil {
		add(Warn, "", "the shipped runtime is not deployed, so its tcpxo-daemon cannot be checked against the installer")
		return out
	}
	pair, ok := want.Releases.PairFor(want.BOM.Images.Installer.Version)
	for _, img := range st.DaemonImages {
		ref, err := bom.ParsePinned(img)
		switch {
		case !ok:
			add(Fail, "", "installer %s has no published pair in bom/releases.yaml", want.BOM.Images.Installer.Version)
		case err != nil:
			add(Fail, "", "the deployed runtime's tcpxo-daemon image %s is not pinned by digest (%v)", img, err)
		case ref.Tag() != pair.Daemon:
			add(Fail, "", "the deployed runtime runs tcpxo-daemon %s, but installer %s is published with daemon %s: the two are coupled; redeploy tcpxogen render runtime", ref.Tag(), pair.Installer, pair.Daemon)
		default:
			add(OK, "", "the deployed runtime's tcpxo-daemon %s is installer %s's published pair", ref.Tag(), pair.Installer)
		}
	}
	return out
}

// checkFloors holds each node's GKE version to the pinned release's floor
// in bom/releases.yaml, where the release notes give one. The driver branch
// the notes name (gpu-driver-version=R580) is a node-pool setting GKE does
// not publish on the Node object, so it is a warning to confirm, never a
// pass: nothing here can read it.
func checkFloors(nodes []corev1.Node, want Expect) []Finding {
	var out []Finding
	pair, ok := want.Releases.PairFor(want.BOM.Images.Installer.Version)
	if ok && pair.DriverBranch != "" {
		out = append(out, Finding{Level: Warn, Check: "driver-branch", Message: fmt.Sprintf("installer %s's release notes require the node pool's gpu-driver-version=%s (driver %s or later), which the Node objects cannot confirm (%s; GKE publishes that label's values as install modes, default, latest or disabled, not driver branches); confirm it with gcloud container node-pools describe POOL --cluster CLUSTER", pair.Installer, pair.DriverBranch, pair.Driver, driverLabels(nodes))})
	}
	if !ok || pair.GKE == "" {
		return append(out, Finding{Level: OK, Check: "gke-version", Message: fmt.Sprintf("installer %s's release notes give no GKE floor", want.BOM.Images.Installer.Version)})
	}
	floor, err := version.ParseSemantic(pair.GKE)
	if err != nil {
		return append(out, Finding{Level: Fail, Check: "gke-version", Message: fmt.Sprintf("bom/releases.yaml: the GKE floor %q of %s is not a version: %v", pair.GKE, pair.Installer, err)})
	}
	for _, n := range nodes {
		kv := n.Status.NodeInfo.KubeletVersion
		v, err := version.ParseSemantic(strings.TrimPrefix(kv, "v"))
		switch {
		case err != nil:
			out = append(out, Finding{Level: Fail, Check: "gke-version", Node: n.Name, Message: fmt.Sprintf("kubelet version %q is not a GKE version", kv)})
		case v.LessThan(floor):
			out = append(out, Finding{Level: Fail, Check: "gke-version", Node: n.Name, Message: fmt.Sprintf("GKE %s is below %s, which installer %s's release notes require (with gpu-driver-version=%s); upgrade the node pool", kv, pair.GKE, pair.Installer, pair.DriverBranch)})
		default:
			out = append(out, Finding{Level: OK, Check: "gke-version", Node: n.Name, Message: fmt.Sprintf("GKE %s, at or above %s", kv, pair.GKE)})
		}
	}
	return out
}

// DriverVersionLabel is the node label GKE sets from the node pool's
// gpu-driver-version (Google's Autopilot NCCL test selects nodes by
// cloud.google.com/gke-gpu-driver-version: latest). Its published values
// are GKE's install modes (default, latest, disabled; the API's
// GPUDriverVersion enum), not a driver branch, so it is reported, never
// judged.
const DriverVersionLabel = "cloud.google.com/gke-gpu-driver-version"

// driverLabels says what each node's DriverVersionLabel reads, grouped by
// value.
func driverLabels(nodes []corev1.Node) string {
	byValue := map[string][]string{}
	for _, n := range nodes {
		v := n.Labels[DriverVersionLabel]
		byValue[v] = append(byValue[v], n.Name)
	}
	var parts []string
	for v, ns := range byValue {
		if v == "" {
			parts = append(parts, "no "+DriverVersionLabel+" label on "+listNodes(ns))
			continue
		}
		parts = append(parts, DriverVersionLabel+"="+v+" on "+listNodes(ns))
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

func containerImage(cs []corev1.Container, name string) (string, bool) {
	i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == name })
	if i < 0 {
		return "", false
	}
	return cs[i].Image, true
}

// Failed tells whether any finding fails.
func Failed(fs []Finding) bool {
	return slices.ContainsFunc(fs, func(f Finding) bool { return f.Level == Fail })
}
