package cluster

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

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
	// InstallerPods are the fabric's installer DaemonSet's pods
	// (InstallerLabelOf).
	InstallerPods []corev1.Pod
	// DaemonImages are the tcpxo-daemon images of the deployed shipped
	// runtime; nil when it is not deployed (TCPXO only).
	DaemonImages []string
	// Machine is the pool's machine type (CheckPool), whose shipped
	// runtime was read.
	Machine fabric.MachineType
	// Runtime is the deployed shipped ClusterTrainingRuntime of the pool's
	// fabric and machine type as the API server serves it; nil when it is
	// not deployed.
	Runtime *unstructured.Unstructured
}

// Expect is what the cluster should match: the fabric and machine type of
// the pool (CheckPool decides them), the BOM, the release table and, when
// given, the recipe's mapping.
type Expect struct {
	// Fabric is the fabric judged; the zero Fabric is TCPXO.
	Fabric fabric.Fabric
	// Machine is the pool's machine type (CheckPool); its GKE floor and,
	// for a fabric with a runtime per machine type, the deployed runtime
	// are judged by it.
	Machine  fabric.MachineType
	BOM      *bom.BOM
	Releases *bom.Releases
	Mapping  interfaces.Mapping
	// RecipeMachine is the machine type the recipe names ("" for none):
	// a pool of another one is refused.
	RecipeMachine string
	// Render renders the fabric's runtime for a machine type and a
	// mapping: a fabric whose runtime carries no daemon to pair with the
	// installer (gIB) has its deployed runtime held to it. Nil: not judged.
	Render func(machineType string, m interfaces.Mapping) (*trainer.ClusterTrainingRuntime, error)
}

// ExpectFor is what a pool of fabric f should match with inputs in: the
// BOM, the release table and, for a fabric whose runtime carries no daemon
// to pair with the installer (gIB), the render its deployed runtime is
// held to.
func ExpectFor(in *runtimes.Inputs, f fabric.Fabric) Expect {
	want := Expect{Fabric: f, BOM: in.BOM, Releases: in.Releases}
	if f.Name == fabric.GIB.Name {
		want.Render = func(mt string, m interfaces.Mapping) (*trainer.ClusterTrainingRuntime, error) {
			return runtimes.RDMARuntime(in, runtimes.RDMAOptions{MachineType: mt, Interfaces: m})
		}
	}
	return want
}

// fabric is the fabric judged, TCPXO when none is named.
func (e Expect) fabric() fabric.Fabric {
	if e.Fabric.Name == "" {
		return fabric.TCPXO
	}
	return e.Fabric
}

// InstallerLabelOf selects fabric f's installer pods as its shipped
// components label them (runtimes/components.yaml, components-rdma.yaml).
func InstallerLabelOf(f fabric.Fabric) string { return names.AppLabel + "=" + f.InstallerDaemonSet }

// Check judges the cluster per node in the layout of want's fabric: its
// fabric-NIC topology, the installer running on it, and its GKE version
// against the floor (TCPXO: the installer release's; gIB: the machine
// type's). A node
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
	w := wordsFor(want.fabric())

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
		m, err := nn.mapping(w)
		if err != nil {
			add(Fail, "topology", n.Name, "%v", err)
			continue
		}
		mappings[m] = append(mappings[m], n.Name)
		if !want.Mapping.IsZero() && m != want.Mapping {
			add(Fail, "topology", n.Name, "the %ss carry %s, where the recipe maps %s: the runtime would attach each pod interface to another host NIC's network; fix the recipe (%s -o values) or the node pool", w.nic, m, want.Mapping, w.discover)
			continue
		}
		add(OK, "topology", n.Name, "eight %ss on eight PCI slots: %s", w.nic, m)
	}
	// Unverified nodes are warnings only beside nodes that were verified: a
	// pool where no node shows its NICs has had nothing checked, and a pass
	// there would vouch for a topology nobody read.
	if unverified == len(nodes) {
		add(Fail, "topology", "", "no target node's %s topology could be verified (none carries %s and %s): nothing shows that the pods' eight networks reach eight %ss; GKE writes both on multi-network nodes, so check that the node pool was created with the eight additional networks (--additional-node-network) and that --node-selector picks the %s",
			w.hyphenated(), networkv1.NorthInterfacesAnnotationKey, networkv1.NICInfoAnnotationKey, w.nic, w.pool)
	}
	if want.Mapping.IsZero() && len(mappings) > 1 {
		var lines []string
		for m, ns := range mappings {
			lines = append(lines, fmt.Sprintf("%s on %s", m, listNodes(ns)))
		}
		slices.Sort(lines)
		add(Fail, "topology", "", "the nodes disagree on which network sits on which %s: %s", w.nic, strings.Join(lines, "; "))
	}
	// Each mapped network once, by name, with the deviceMode its NIC needs.
	var mapped []wantNetwork
	for m := range mappings {
		for _, n := range mappedNetworks(m) {
			if !slices.ContainsFunc(mapped, func(o wantNetwork) bool { return o.name == n.name }) {
				mapped = append(mapped, n)
			}
		}
	}
	slices.SortFunc(mapped, func(a, b wantNetwork) int { return strings.Compare(a.name, b.name) })
	for _, p := range networkProblems(mapped, st.Networks) {
		add(Fail, "networks", "", "%s", p)
	}

	out = append(out, checkInstaller(nodes, st, want, w)...)
	if want.fabric().Name == fabric.TCPXO.Name {
		out = append(out, checkDaemon(st, want)...)
		out = append(out, checkFloors(nodes, want)...)
	} else {
		out = append(out, checkRuntime(st, want, agreed(want.Mapping, mappings))...)
		out = append(out, checkMachineFloor(nodes, want)...)
	}
	if st.Runtime != nil {
		out = append(out, checkPlacement(nodes, st.Runtime)...)
		out = append(out, webhookFindings(st.Runtime)...)
	}
	return out
}

// checkPlacement holds the deployed runtime's node pods to the pool: they
// must be able to land on its nodes, by the node selector and required node
// affinity as the scheduler's filter reads them (component-helpers'
// nodeaffinity). A runtime aimed at other machines (the TCPXO runtime
// rendered for A3 Ultra's accelerator, a gIB runtime for A3 Mega) runs
// none of its pods on this pool, and on the machines it selects its pods
// find none of the fabric's NICs.
func checkPlacement(nodes []corev1.Node, u *unstructured.Unstructured) []Finding {
	finding := func(l Level, format string, a ...any) []Finding {
		return []Finding{{Level: l, Check: "runtime-placement", Message: fmt.Sprintf(format, a...)}}
	}
	rt := &trainer.ClusterTrainingRuntime{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, rt); err != nil {
		return finding(Fail, "ClusterTrainingRuntime %s does not decode as the trainer's type: %v", u.GetName(), err)
	}
	tpl, err := wiring.RuntimePodTemplate(rt, runtimes.NodeContainer)
	if err != nil {
		return finding(Fail, "ClusterTrainingRuntime %s: %v", rt.Name, err)
	}
	required := nodeaffinity.GetRequiredNodeAffinity(&corev1.Pod{Spec: tpl.Spec})
	var off []string
	for i := range nodes {
		ok, err := required.Match(&nodes[i])
		if err != nil {
			return finding(Fail, "the deployed %s's required node affinity does not parse: %v", rt.Name, err)
		}
		if !ok {
			off = append(off, nodes[i].Name)
		}
	}
	w := wiring.Of(tpl, runtimes.NodeContainer)
	switch {
	case len(off) == len(nodes):
		return finding(Fail, "the deployed %s selects none of the %s (node selector %s, required node affinity %s): its pods run on other machines, where the fabric's NICs are not; redeploy it as tcpxogen render runtime prints it for this pool",
			rt.Name, nodeCount(len(nodes)), orNone(selectorTerms(w.NodeSelector)), orNone(termSummaries(w.NodeAffinity)))
	case len(off) > 0:
		return finding(Warn, "the deployed %s's pods cannot land on %s (%s) of the target nodes: its node selector or affinity excludes them", rt.Name, nodeCount(len(off)), listNodes(off))
	}
	return finding(OK, "the deployed %s's pods can land on every target node", rt.Name)
}

func selectorTerms(sel map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(sel)) {
		out = append(out, k+"="+sel[k])
	}
	return out
}

func termSummaries(terms []corev1.NodeSelectorTerm) []string {
	var out []string
	for _, t := range terms {
		var reqs []string
		for _, r := range t.MatchExpressions {
			reqs = append(reqs, fmt.Sprintf("%s %s %s", r.Key, r.Operator, strings.Join(r.Values, ",")))
		}
		out = append(out, strings.Join(reqs, " and "))
	}
	return out
}

// agreed is the mapping the deployed runtime is held to: the recipe's, else
// the one every verified node carries; zero when the nodes disagree or none
// was verified.
func agreed(recipe interfaces.Mapping, mappings map[interfaces.Mapping][]string) interfaces.Mapping {
	if !recipe.IsZero() {
		return recipe
	}
	if len(mappings) != 1 {
		return interfaces.Mapping{}
	}
	for m := range mappings {
		return m
	}
	return interfaces.Mapping{}
}

// checkInstaller holds the fabric's installer pod on every target node to
// the BOM's pin: digest-pinned, the same on every node, and the pinned
// image.
func checkInstaller(nodes []corev1.Node, st State, want Expect, w nicWords) []Finding {
	var out []Finding
	add := func(l Level, node, format string, a ...any) {
		out = append(out, Finding{Level: l, Check: "installer", Node: node, Message: fmt.Sprintf(format, a...)})
	}
	f := want.fabric()
	img, role := want.BOM.InstallerOf(f)
	pin := img.Reference
	byImage := map[string][]string{}
	for _, n := range nodes {
		i := slices.IndexFunc(st.InstallerPods, func(p corev1.Pod) bool { return p.Spec.NodeName == n.Name })
		if i < 0 {
			add(Fail, n.Name, "no installer pod (%s) runs on the node: the plugin is not installed there; apply %s", InstallerLabelOf(f), w.components)
			continue
		}
		// Both fabrics' DaemonSets name their installer init container as
		// the DaemonSet (runtimes/components.yaml, components-rdma.yaml).
		got, ok := containerImage(st.InstallerPods[i].Spec.InitContainers, f.InstallerDaemonSet)
		if !ok {
			add(Fail, n.Name, "installer pod %s has no %s init container", st.InstallerPods[i].Name, f.InstallerDaemonSet)
			continue
		}
		byImage[got] = append(byImage[got], n.Name)
		ref, err := bom.ParsePinned(got)
		switch {
		case err != nil:
			add(Fail, n.Name, "the installer image %s is not pinned by digest (%v): a tag can move, so what the node installed is unknown; deploy %s", got, err, w.components)
		case got != pin:
			add(Fail, n.Name, "the node runs installer %s, but bom/bom.yaml pins %s (%s, role %s): node pools upgrade separately; upgrade the installer DaemonSet to the pin (%s)", ref.Tag(), img.Version, pin, role, w.components)
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
	return out
}

// checkDaemon holds the deployed TCPXO runtime's tcpxo-daemon to the
// installer's published pair.
func checkDaemon(st State, want Expect) []Finding {
	var out []Finding
	add := func(l Level, format string, a ...any) {
		out = append(out, Finding{Level: l, Check: "installer", Message: fmt.Sprintf(format, a...)})
	}
	if st.DaemonImages == nil {
		add(Warn, "the shipped runtime is not deployed, so its tcpxo-daemon cannot be checked against the installer")
		return out
	}
	pair, ok := want.Releases.PairFor(want.BOM.Images.Installer.Version)
	for _, img := range st.DaemonImages {
		ref, err := bom.ParsePinned(img)
		switch {
		case !ok:
			add(Fail, "installer %s has no published pair in bom/releases.yaml", want.BOM.Images.Installer.Version)
		case err != nil:
			add(Fail, "the deployed runtime's tcpxo-daemon image %s is not pinned by digest (%v)", img, err)
		case ref.Tag() != pair.Daemon:
			add(Fail, "the deployed runtime runs tcpxo-daemon %s, but installer %s is published with daemon %s: the two are coupled; redeploy tcpxogen render runtime", ref.Tag(), pair.Installer, pair.Daemon)
		default:
			add(OK, "the deployed runtime's tcpxo-daemon %s is installer %s's published pair", ref.Tag(), pair.Installer)
		}
	}
	return out
}

// checkRuntime holds the deployed runtime of the pool's machine type to
// what the mapping renders, by the wiring the fabric depends on (the
// differ check trainjob uses): a lost or changed field fails, since the
// runtime's pods would not get what the nodes and the installer provide;
// an addition is a warning. Not deployed is a warning: nothing runs on it.
func checkRuntime(st State, want Expect, m interfaces.Mapping) []Finding {
	f := want.fabric()
	name := f.ShippedRuntime(want.Machine.Name)
	finding := func(l Level, format string, a ...any) []Finding {
		return []Finding{{Level: l, Check: "runtime", Message: fmt.Sprintf(format, a...)}}
	}
	redeploy := fmt.Sprintf("tcpxogen render runtime --fabric %s --machine-type %s --interfaces %s | kubectl apply -f -", f.Name, want.Machine.Name, m)
	switch {
	case st.Runtime == nil:
		return finding(Warn, "ClusterTrainingRuntime %s is not deployed, so nothing on the cluster runs the %s pool's wiring yet", name, want.Machine.Name)
	case want.Render == nil:
		return nil
	case m.IsZero():
		return finding(Fail, "the deployed %s cannot be held to a mapping: the nodes carry none they agree on (above); fix the nodes or pass --recipe", name)
	}
	rendered, err := want.Render(want.Machine.Name, m)
	if err != nil {
		return finding(Fail, "rendering %s for %s: %v", name, m, err)
	}
	deployed := &trainer.ClusterTrainingRuntime{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(st.Runtime.Object, deployed); err != nil {
		return finding(Fail, "ClusterTrainingRuntime %s does not decode as the trainer's type: %v", name, err)
	}
	var w [2]wiring.Wiring
	for i, rt := range []*trainer.ClusterTrainingRuntime{deployed, rendered} {
		tpl, err := wiring.RuntimePodTemplate(rt, runtimes.NodeContainer)
		if err != nil {
			return finding(Fail, "ClusterTrainingRuntime %s: %v", name, err)
		}
		w[i] = wiring.Of(tpl, runtimes.NodeContainer)
	}
	var lost, added []string
	for _, c := range wiring.Diff(w[1], w[0]) {
		if c.IsAddition() {
			added = append(added, c.String())
			continue
		}
		lost = append(lost, c.String())
	}
	var out []Finding
	if len(lost) > 0 {
		out = append(out, finding(Fail, "the deployed %s differs from what %s renders (%s): %s; its pods would not get the fabric the nodes provide: redeploy it (%s)",
			name, m, describeChanges(lost), strings.Join(lost, "; "), redeploy)...)
	}
	if len(added) > 0 {
		out = append(out, finding(Warn, "the deployed %s adds to what %s renders: %s", name, m, strings.Join(added, "; "))...)
	}
	if len(out) == 0 {
		out = finding(OK, "the deployed %s carries the wiring %s renders", name, m)
	}
	return out
}

func describeChanges(cs []string) string {
	if len(cs) == 1 {
		return "1 change"
	}
	return fmt.Sprintf("%d changes", len(cs))
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
	return append(out, gkeVersions(nodes, pair.GKE, floor, func(kv string) string {
		return fmt.Sprintf("GKE %s is below %s, which installer %s's release notes require (with gpu-driver-version=%s); upgrade the node pool", kv, pair.GKE, pair.Installer, pair.DriverBranch)
	})...)
}

// checkMachineFloor holds each node's GKE version to the floor of the
// pool's machine type in bom/releases.yaml (gibMachineTypes, with its
// source).
func checkMachineFloor(nodes []corev1.Node, want Expect) []Finding {
	mt := want.Machine.Name
	fl, ok := want.Releases.GKEFloor(mt)
	if !ok {
		return []Finding{{Level: Fail, Check: "gke-version", Message: fmt.Sprintf("bom/releases.yaml gives no GKE floor for %s (gibMachineTypes): add it from Google's documentation", mt)}}
	}
	floor, err := version.ParseSemantic(fl.GKE)
	if err != nil {
		return []Finding{{Level: Fail, Check: "gke-version", Message: fmt.Sprintf("bom/releases.yaml: the GKE floor %q of %s is not a version: %v", fl.GKE, mt, err)}}
	}
	var out []Finding
	if rel, ok := want.Releases.GIBReleaseFor(want.BOM.Images.GIBInstaller.Version); ok && rel.Driver != "" {
		// As for TCPXO: the driver is a node-pool setting the Node objects
		// do not publish, so it is a warning to confirm, never a pass.
		out = append(out, Finding{Level: Warn, Check: "driver-branch", Message: fmt.Sprintf("NCCL/gIB %s's release notes require GPU driver %s or later (and a CUDA %s runtime in the workload image), which the Node objects cannot confirm (%s); confirm it with gcloud container node-pools describe POOL --cluster CLUSTER",
			rel.Installer, rel.Driver, rel.CUDA, driverLabels(nodes))})
	}
	return append(out, gkeVersions(nodes, fl.GKE, floor, func(kv string) string {
		return fmt.Sprintf("GKE %s is below %s, which %s on %s needs (%s); upgrade the node pool", kv, fl.GKE, want.fabric().Title, mt, fl.Source)
	})...)
}

// gkeVersions judges each node's kubelet version against floor; below
// says why one below it fails.
func gkeVersions(nodes []corev1.Node, floorText string, floor *version.Version, below func(kubelet string) string) []Finding {
	var out []Finding
	for _, n := range nodes {
		kv := n.Status.NodeInfo.KubeletVersion
		v, err := version.ParseSemantic(strings.TrimPrefix(kv, "v"))
		switch {
		case err != nil:
			out = append(out, Finding{Level: Fail, Check: "gke-version", Node: n.Name, Message: fmt.Sprintf("kubelet version %q is not a GKE version", kv)})
		case v.LessThan(floor):
			out = append(out, Finding{Level: Fail, Check: "gke-version", Node: n.Name, Message: below(kv)})
		default:
			out = append(out, Finding{Level: OK, Check: "gke-version", Node: n.Name, Message: fmt.Sprintf("GKE %s, at or above %s", kv, floorText)})
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
