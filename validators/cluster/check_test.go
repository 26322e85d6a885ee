package cluster

import (
	"slices"
	"strings"
	"testing"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

func expect(t *testing.T) Expect {
	t.Helper()
	b, r, _, err := bom.LoadEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	return Expect{BOM: b, Releases: r}
}

func installerPod(node, image string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "nccl-tcpxo-installer-" + node, Namespace: "kube-system"},
		Spec: corev1.PodSpec{NodeName: node, InitContainers: []corev1.Container{
			{Name: "pre-installation", Image: "ignored"}, {Name: names.InstallerContainer, Image: image}}},
	}
}

// healthyState is a pool as the shipped components and runtime deploy it:
// the pinned installer on every node, the pinned daemon in the runtime.
func healthyState(t *testing.T, want Expect, nics func() []hostNIC, nodes ...string) State {
	t.Helper()
	st := State{DaemonImages: []string{want.BOM.Images.Daemon.Reference}}
	for _, n := range nodes {
		node := gkeNode(t, n, nics())
		// As GKE labels an A3 Mega node: the shipped runtime selects it.
		node.Labels = map[string]string{fabric.InstanceTypeLabel: "a3-megagpu-8g", fabric.AcceleratorLabel: "nvidia-h100-mega-80gb"}
		node.Status.NodeInfo.KubeletVersion = "v1.33.5-gke.1200000"
		st.Nodes = append(st.Nodes, node)
		st.InstallerPods = append(st.InstallerPods, installerPod(n, want.BOM.Images.Installer.Reference))
	}
	return st
}

func withNetworks(t *testing.T, st State, names []string) State {
	t.Helper()
	st.Networks = typedNetworks(t, names)
	return st
}

func failures(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		if f.Level == Fail {
			out = append(out, f.String())
		}
	}
	return out
}

func has(t *testing.T, fs []Finding, level Level, parts ...string) {
	t.Helper()
	for _, f := range fs {
		if f.Level != level {
			continue
		}
		s := f.String()
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(s, p)
		}
		if ok {
			return
		}
	}
	var all []string
	for _, f := range fs {
		all = append(all, f.String())
	}
	t.Errorf("no %s finding with %q among:\n%s", level, parts, strings.Join(all, "\n"))
}

func TestCheckHealthyPool(t *testing.T) {
	want := expect(t)
	st := withNetworks(t, healthyState(t, want, func() []hostNIC { return a3Mega(vpcs(8)) }, "n0", "n1"), vpcs(8))
	fs := Check(st, want)
	if f := failures(fs); len(f) > 0 {
		t.Errorf("a healthy pool fails:\n%s", strings.Join(f, "\n"))
	}
	has(t, fs, OK, "topology n0", "eight GPU NICs")
	has(t, fs, OK, "installer n1", want.BOM.Images.Installer.Version)
	has(t, fs, OK, "installer", "published pair")
}

func TestCheckFails(t *testing.T) {
	want := expect(t)
	healthy := func() []hostNIC { return a3Mega(vpcs(8)) }
	t.Run("a displaced slot on every node", func(t *testing.T) {
		st := withNetworks(t, healthyState(t, want, displacedSlot, "n0", "n1"), append(vpcs(7), "gvnic-net"))
		fs := Check(st, want)
		has(t, fs, Fail, "topology n0", "gve0")
		has(t, fs, Fail, "topology n1", "gve0")
	})
	t.Run("an installer of another version on one node", func(t *testing.T) {
		st := withNetworks(t, healthyState(t, want, healthy, "n0", "n1"), vpcs(8))
		st.InstallerPods[1].Spec.InitContainers[1].Image = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.14@sha256:" + strings.Repeat("a", 64)
		fs := Check(st, want)
		has(t, fs, Fail, "installer n1", "runs installer v1.0.14", "pins "+want.BOM.Images.Installer.Version)
		has(t, fs, Fail, "installer", "the nodes run different installers")
		has(t, fs, OK, "installer n0")
	})
	t.Run("an installer image not pinned by digest", func(t *testing.T) {
		st := withNetworks(t, healthyState(t, want, healthy, "n0"), vpcs(8))
		st.InstallerPods[0].Spec.InitContainers[1].Image = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.15"
		has(t, Check(st, want), Fail, "installer n0", "not pinned by digest")
	})
	t.Run("no installer pod on a node", func(t *testing.T) {
		st := withNetworks(t, healthyState(t, want, healthy, "n0", "n1"), vpcs(8))
		st.InstallerPods = st.InstallerPods[:1]
		has(t, Check(st, want), Fail, "installer n1", "no installer pod")
	})
	t.Run("a daemon that is not the installer's pair", func(t *testing.T) {
		st := withNetworks(t, healthyState(t, want, healthy, "n0"), vpcs(8))
		st.DaemonImages = []string{"us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.20@sha256:" + strings.Repeat("b", 64)}
		has(t, Check(st, want), Fail, "installer", "tcpxo-daemon v1.0.20", "published with daemon")
	})
	t.Run("the recipe maps other networks", func(t *testing.T) {
		st := withNetworks(t, healthyState(t, want, healthy, "n0"), vpcs(8))
		w := want
		var err error
		if w.Mapping, err = interfaces.Parse("eth1=vpc2,eth2=vpc1,eth3=vpc3,eth4=vpc4,eth5=vpc5,eth6=vpc6,eth7=vpc7,eth8=vpc8"); err != nil {
			t.Fatal(err)
		}
		has(t, Check(st, w), Fail, "topology n0", "where the recipe maps")
	})
	t.Run("a missing and a malformed annotation", func(t *testing.T) {
		st := withNetworks(t, healthyState(t, want, healthy, "n0", "n1"), vpcs(8))
		st.Nodes[0].Annotations = nil
		st.Nodes[1].Annotations["networking.gke.io/nic-info"] = "[{"
		fs := Check(st, want)
		has(t, fs, Warn, "topology n0", "unverified")
		has(t, fs, Fail, "topology n1", "is not GKE's JSON list")
	})
	// One unverified node beside verified ones is a warning (the issue's
	// contract); a pool where no node shows its NICs has had nothing
	// checked and fails, whatever else passes.
	t.Run("no node verified", func(t *testing.T) {
		st := withNetworks(t, healthyState(t, want, healthy, "n0", "n1"), vpcs(8))
		for i := range st.Nodes {
			delete(st.Nodes[i].Annotations, networkv1.NICInfoAnnotationKey)
			delete(st.Nodes[i].Annotations, networkv1.NorthInterfacesAnnotationKey)
		}
		fs := Check(st, want)
		has(t, fs, Warn, "topology n0", "unverified")
		has(t, fs, Warn, "topology n1", "unverified")
		has(t, fs, Fail, "topology", "no target node's GPU-NIC topology could be verified", "--additional-node-network")
		if !Failed(fs) {
			t.Errorf("a pool with no node verified passes:\n%v", fs)
		}
	})
	t.Run("one node unverified beside a verified one", func(t *testing.T) {
		st := withNetworks(t, healthyState(t, want, healthy, "n0", "n1"), vpcs(8))
		st.Nodes[0].Annotations = nil
		fs := Check(st, want)
		has(t, fs, Warn, "topology n0", "unverified")
		if Failed(fs) {
			t.Errorf("one unverified node beside a verified one fails:\n%v", fs)
		}
	})
	// The label GKE sets from the node pool's gpu-driver-version names an
	// install mode (Google's Autopilot NCCL test selects
	// cloud.google.com/gke-gpu-driver-version: latest; GKE's API enum is
	// default, latest, disabled), so the warning reports it per node and
	// never turns it into a pass.
	t.Run("the driver label is reported, not judged", func(t *testing.T) {
		w := pinning(want, "v1.0.17")
		st := withNetworks(t, healthyState(t, w, healthy, "n0", "n1", "n2"), vpcs(8))
		for i, v := range []string{"latest", "latest", "R595"} {
			if st.Nodes[i].Labels == nil {
				st.Nodes[i].Labels = map[string]string{}
			}
			st.Nodes[i].Labels[DriverVersionLabel] = v
		}
		fs := Check(st, w)
		has(t, fs, Warn, "driver-branch", "gpu-driver-version=R595", DriverVersionLabel+"=R595 on n2", DriverVersionLabel+"=latest on n0, n1")
		if slices.ContainsFunc(fs, func(f Finding) bool { return f.Check == "driver-branch" && f.Level != Warn }) {
			t.Errorf("the driver branch is judged from a label:\n%v", fs)
		}
	})
	t.Run("a node below the release's GKE floor", func(t *testing.T) {
		w := pinning(want, "v1.0.16")
		st := withNetworks(t, healthyState(t, w, healthy, "n0"), vpcs(8))
		st.Nodes[0].Status.NodeInfo.KubeletVersion = "v1.32.9-gke.1000"
		fs := Check(st, w)
		has(t, fs, Fail, "gke-version n0", "below 1.33.5-gke.1125000", "gpu-driver-version=R580")
		// The Apr 30, 2026 notes name the node flag gpu-driver-version=R580
		// and driver 580.65.06+; the Node object carries neither, so the
		// check asks for it rather than passing it.
		has(t, fs, Warn, "driver-branch", "gpu-driver-version=R580", "580.65.06", "node-pools describe")
		has(t, fs, Warn, "driver-branch", "no "+DriverVersionLabel+" label on n0")
		if slices.ContainsFunc(fs, func(f Finding) bool { return f.Check == "driver-branch" && f.Level != Warn }) {
			t.Errorf("the driver branch is judged, though no node shows it:\n%v", fs)
		}
	})
	t.Run("a release whose notes name no driver branch", func(t *testing.T) {
		// The Jan 9, 2026 section (v1.0.15) names no gpu-driver-version.
		st := withNetworks(t, healthyState(t, want, healthy, "n0"), vpcs(8))
		if fs := Check(st, want); slices.ContainsFunc(fs, func(f Finding) bool { return f.Check == "driver-branch" }) {
			t.Errorf("a driver-branch finding for %s:\n%v", want.BOM.Images.Installer.Version, fs)
		}
	})
}

// pinning is want with the BOM's installer pinned to version, as after a
// bump: the release table's row for version applies.
func pinning(want Expect, version string) Expect {
	b := *want.BOM
	b.Images.Installer.Version = version
	want.BOM = &b
	return want
}
