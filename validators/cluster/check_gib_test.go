package cluster

import (
	"context"
	"slices"
	"strings"
	"testing"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
)

// gibExpect is what check cluster --fabric gib expects of a pool of machine
// type mt: the shipped inputs' BOM and release table, and the runtime the
// shipped builder renders.
func gibExpect(t *testing.T, mt string) Expect {
	t.Helper()
	in, err := shipped.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := fabric.GIB.MachineType(mt)
	if !ok {
		t.Fatalf("no gIB machine type %s", mt)
	}
	want := ExpectFor(in, fabric.GIB)
	want.Machine = m
	return want
}

func gibInstallerPod(node, image string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "nccl-rdma-installer-" + node, Namespace: "kube-system"},
		Spec:       corev1.PodSpec{NodeName: node, InitContainers: []corev1.Container{{Name: fabric.GIB.InstallerDaemonSet, Image: image}}},
	}
}

// rdmaParamSets are Google's A3 Ultra / A4 networks as typed objects:
// rdma-* of deviceMode RDMA, gvnic-1 of NetDevice, all Ready.
func rdmaParamSets(t *testing.T) Networks {
	t.Helper()
	nets := typedNetworks(t, append([]string{"gvnic-1"}, rdmaNames(8)...))
	for i := range nets.ParamSets {
		nets.ParamSets[i].Spec.DeviceMode = networkv1.RDMA
		if nets.ParamSets[i].Name == "gvnic-1" {
			nets.ParamSets[i].Spec.DeviceMode = networkv1.NetDevice
		}
	}
	return nets
}

// deployedRuntime is want's runtime rendered for mapping m as the API
// server serves it (unstructured), after edit.
func deployedRuntime(t *testing.T, want Expect, m string, edit func(*trainer.ClusterTrainingRuntime)) *unstructured.Unstructured {
	t.Helper()
	mapping, err := interfaces.RDMA.Parse(m)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := want.Render(want.Machine.Name, mapping)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(rt)
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rt)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

const googleMapping = "eth1=gvnic-1,eth2=rdma-0,eth3=rdma-1,eth4=rdma-2,eth5=rdma-3,eth6=rdma-4,eth7=rdma-5,eth8=rdma-6,eth9=rdma-7"

// healthyGIB is a pool of mt as Google's setup provisions it: the eight
// RDMA networks and gvnic-1, the pinned gIB installer on every node, GKE
// at kubelet, the runtime rendered for the mapping deployed.
func healthyGIB(t *testing.T, want Expect, kubelet string, nodes ...string) State {
	t.Helper()
	st := State{Networks: rdmaParamSets(t), Runtime: deployedRuntime(t, want, googleMapping, nil)}
	for _, n := range nodes {
		node := gkeNode(t, n, a3Ultra("gvnic-1", rdmaNames(8)))
		node.Labels = map[string]string{fabric.InstanceTypeLabel: want.Machine.Name, fabric.AcceleratorLabel: want.Machine.Accelerator}
		node.Status.NodeInfo.KubeletVersion = kubelet
		st.Nodes = append(st.Nodes, node)
		st.InstallerPods = append(st.InstallerPods, gibInstallerPod(n, want.BOM.Images.GIBInstaller.Reference))
	}
	return st
}

func TestCheckGIBHealthyPools(t *testing.T) {
	for _, mt := range fabric.GIB.MachineTypeNames() {
		t.Run(mt, func(t *testing.T) {
			want := gibExpect(t, mt)
			fs := Check(healthyGIB(t, want, "v1.33.5-gke.1200000", "n0", "n1"), want)
			if f := failures(fs); len(f) > 0 {
				t.Errorf("a healthy %s pool fails:\n%s", mt, strings.Join(f, "\n"))
			}
			has(t, fs, OK, "topology n0", "eight RDMA NICs on eight PCI slots", googleMapping)
			has(t, fs, OK, "installer n1", want.BOM.Images.GIBInstaller.Version+", as pinned")
			has(t, fs, OK, "runtime", "the deployed "+fabric.GIB.RuntimeFor(mt)+" carries the wiring "+googleMapping+" renders")
			has(t, fs, OK, "gke-version n1", "at or above")
			// The driver is a node-pool setting no Node object shows: asked
			// for, never passed.
			has(t, fs, Warn, "driver-branch", "NCCL/gIB v1.1.2", "580.95.05", "node-pools describe")
			if slices.ContainsFunc(fs, func(f Finding) bool { return strings.Contains(f.Message, "tcpxo") }) {
				t.Errorf("a gIB pool is judged with TCPXO's words:\n%v", fs)
			}
		})
	}
}

// The GKE floor is the machine type's (Google's "Create a custom
// AI-optimized GKE cluster which uses A4 or A3 Ultra": A3 Ultra
// 1.31.4-gke.1183000, A4 1.32.2-gke.1475000), read from the release table.
func TestCheckGIBFloorPerMachineType(t *testing.T) {
	for _, tc := range []struct {
		mt, kubelet string
		fails       bool
	}{
		{"a3-ultragpu-8g", "v1.31.4-gke.1182000", true},
		{"a3-ultragpu-8g", "v1.31.4-gke.1183000", false},
		{"a3-ultragpu-8g", "v1.32.1-gke.1000000", false},
		{"a4-highgpu-8g", "v1.32.1-gke.1000000", true},
		{"a4-highgpu-8g", "v1.32.2-gke.1475000", false},
	} {
		want := gibExpect(t, tc.mt)
		fl, ok := want.Releases.GKEFloor(tc.mt)
		if !ok {
			t.Fatalf("bom/releases.yaml has no floor for %s", tc.mt)
		}
		fs := Check(healthyGIB(t, want, tc.kubelet, "n0"), want)
		if tc.fails {
			has(t, fs, Fail, "gke-version n0", "GKE "+tc.kubelet+" is below "+fl.GKE, tc.mt, fl.Source)
			continue
		}
		if f := failures(fs); len(f) > 0 {
			t.Errorf("%s at %s fails:\n%s", tc.mt, tc.kubelet, strings.Join(f, "\n"))
		}
	}
}

func TestCheckGIBFails(t *testing.T) {
	const mt = "a3-ultragpu-8g"
	want := gibExpect(t, mt)
	healthy := func(t *testing.T) State { return healthyGIB(t, want, "v1.33.5-gke.1200000", "n0", "n1") }
	drifted := "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.1@sha256:" + strings.Repeat("a", 64)
	for name, tc := range map[string]struct {
		edit func(t *testing.T, st *State, want *Expect)
		want [][]string
	}{
		"a drifted installer on one node": {func(t *testing.T, st *State, _ *Expect) {
			st.InstallerPods[1].Spec.InitContainers[0].Image = drifted
		}, [][]string{{"installer n1", "runs installer v1.1.1", "pins v1.1.2", "role gibInstaller", "render components --fabric gib"}, {"installer", "the nodes run different installers"}}},
		"an installer by tag": {func(t *testing.T, st *State, _ *Expect) {
			st.InstallerPods[0].Spec.InitContainers[0].Image = "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.2"
		}, [][]string{{"installer n0", "not pinned by digest"}}},
		"TCPXO's installer pod": {func(t *testing.T, st *State, want *Expect) {
			st.InstallerPods[0] = installerPod("n0", want.BOM.Images.Installer.Reference)
		}, [][]string{{"installer n0", "has no nccl-rdma-installer init container"}}},
		"a displaced NIC": {func(t *testing.T, st *State, _ *Expect) {
			nics := a3Ultra("gvnic-1", rdmaNames(8))
			nics[4].pci = nics[3].pci
			n := gkeNode(t, "n1", nics)
			n.Labels, n.Status = st.Nodes[1].Labels, st.Nodes[1].Status
			st.Nodes[1] = n
		}, [][]string{{"topology n1", `RDMA NIC eth3 has PCI address "0000:92:00.0", not a slot of its own`}}},
		"the recipe maps other networks": {func(t *testing.T, st *State, want *Expect) {
			m, err := interfaces.RDMA.Parse("eth2=rdma-1,eth3=rdma-0,eth4=rdma-2,eth5=rdma-3,eth6=rdma-4,eth7=rdma-5,eth8=rdma-6,eth9=rdma-7")
			if err != nil {
				t.Fatal(err)
			}
			want.Mapping = m
		}, [][]string{{"topology n0", "the RDMA NICs carry " + googleMapping + ", where the recipe maps eth2=rdma-1", "tcpxogen discover --fabric gib -o values"}}},
		"RDMA networks of deviceMode NetDevice": {func(t *testing.T, st *State, _ *Expect) {
			st.Networks.ParamSets[3].Spec.DeviceMode = networkv1.NetDevice
		}, [][]string{{"networks", "GKENetworkParamSet " + st0ParamSet(t) + " of Network", "has deviceMode NetDevice, not RDMA"}}},
		"the deployed runtime lost its networks": {func(t *testing.T, st *State, want *Expect) {
			st.Runtime = deployedRuntime(t, *want, "eth2=rdma-0,eth3=rdma-1,eth4=rdma-2,eth5=rdma-3,eth6=rdma-4,eth7=rdma-5,eth8=rdma-6,eth9=rdma-7", nil)
		}, [][]string{{"runtime", "the deployed torch-distributed-rdma-a3-ultragpu-8g differs from what " + googleMapping + " renders", "annotation", "render runtime --fabric gib --machine-type a3-ultragpu-8g --interfaces " + googleMapping}}},
		"the deployed runtime lost an NCCL variable": {func(t *testing.T, st *State, want *Expect) {
			st.Runtime = deployedRuntime(t, *want, googleMapping, func(rt *trainer.ClusterTrainingRuntime) {
				c := &rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0]
				c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "NCCL_NET" })
			})
		}, [][]string{{"runtime", "differs from what", "NCCL_NET"}}},
		"the deployed runtime is another machine type's": {func(t *testing.T, st *State, want *Expect) {
			a4 := gibExpect(t, "a4-highgpu-8g")
			st.Runtime = deployedRuntime(t, a4, googleMapping, nil)
		}, [][]string{{"runtime", "differs from what", "a4-highgpu-8g"}}},
	} {
		t.Run(name, func(t *testing.T) {
			st, w := healthy(t), want
			tc.edit(t, &st, &w)
			fs := Check(st, w)
			for _, parts := range tc.want {
				has(t, fs, Fail, parts...)
			}
		})
	}
	t.Run("the runtime not deployed", func(t *testing.T) {
		st := healthy(t)
		st.Runtime = nil
		fs := Check(st, want)
		has(t, fs, Warn, "runtime", "ClusterTrainingRuntime torch-distributed-rdma-a3-ultragpu-8g is not deployed")
		if Failed(fs) {
			t.Errorf("a pool without the runtime deployed fails:\n%v", fs)
		}
	})
	t.Run("an addition to the deployed runtime", func(t *testing.T) {
		st := healthy(t)
		st.Runtime = deployedRuntime(t, want, googleMapping, func(rt *trainer.ClusterTrainingRuntime) {
			c := &rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0]
			c.Env = append(c.Env, corev1.EnvVar{Name: "NCCL_DEBUG", Value: "INFO"})
		})
		fs := Check(st, want)
		has(t, fs, Warn, "runtime", "adds to what", "NCCL_DEBUG")
		if Failed(fs) {
			t.Errorf("an added variable fails:\n%v", fs)
		}
	})
}

// st0ParamSet names the fourth GKENetworkParamSet rdmaParamSets returns, the
// one the deviceMode case edits.
func st0ParamSet(t *testing.T) string {
	t.Helper()
	return rdmaParamSets(t).ParamSets[3].Name
}

// A deployed runtime aimed at other machines (rendered before render
// refused it, or edited) runs none of its pods on the pool: the TCPXO
// runtime selecting A3 Ultra's accelerator on an A3 Mega pool, the A4 gIB
// runtime deployed where the A3 Ultra one belongs.
func TestCheckDeployedRuntimeAimedElsewhere(t *testing.T) {
	want := expect(t)
	st := withNetworks(t, healthyState(t, want, func() []hostNIC { return a3Mega(vpcs(8)) }, "n0", "n1"), vpcs(8))
	rt := shippedRuntime(t)
	rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.NodeSelector = map[string]string{fabric.AcceleratorLabel: "nvidia-h200-141gb"}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rt)
	if err != nil {
		t.Fatal(err)
	}
	st.Runtime = &unstructured.Unstructured{Object: u}
	has(t, Check(st, want), Fail, "runtime-placement", "the deployed torch-distributed-tcpxo selects none of the 2 nodes (node selector cloud.google.com/gke-accelerator=nvidia-h200-141gb")

	ultra := gibExpect(t, "a3-ultragpu-8g")
	gst := healthyGIB(t, ultra, "v1.33.5-gke.1200000", "n0", "n1")
	gst.Runtime = deployedRuntime(t, gibExpect(t, "a4-highgpu-8g"), googleMapping, nil)
	has(t, Check(gst, ultra), Fail, "runtime-placement", "selects none of the 2 nodes", "node.kubernetes.io/instance-type In a4-highgpu-8g")

	// The shipped runtime lands on its own pool.
	has(t, Check(healthyGIB(t, ultra, "v1.33.5-gke.1200000", "n0"), ultra), OK, "runtime-placement", "can land on every target node")
}

// On a gIB pool check cluster judges the TrainJobs of that machine type's
// runtime and benchmark, against the deployed runtime: one whose snapshot
// holds other wiring is named, and TrainJobs of TCPXO's runtime or of the
// other machine type's are not read.
func TestReadTrainJobsOfAGIBPool(t *testing.T) {
	ultra := gibExpect(t, "a3-ultragpu-8g")
	deployed := deployedRuntime(t, ultra, googleMapping, nil)
	rt := &trainer.ClusterTrainingRuntime{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(deployed.Object, rt); err != nil {
		t.Fatal(err)
	}
	older := rt.DeepCopy()
	c := &older.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0]
	c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "NCCL_NET" })
	name := fabric.GIB.RuntimeFor("a3-ultragpu-8g")
	objs := []runtime.Object{
		trainJob(t, "team-a", "llama", "u1", trainer.RuntimeRef{Name: name}),
		trainJob(t, "team-a", "mega", "u2", trainer.RuntimeRef{Name: names.Runtime}),
		trainJob(t, "team-b", "a4", "u3", trainer.RuntimeRef{Name: fabric.GIB.RuntimeFor("a4-highgpu-8g")}),
	}
	gvrs := map[schema.GroupVersionResource]string{trainerTrainJobs: "TrainJobList", trainerNSRuntimes: "TrainingRuntimeList"}
	cl := &Clients{
		Kube:    kubefake.NewClientset(snapshotOf(t, "team-a", "llama", "u1", older)),
		Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), gvrs, objs...),
		Host:    "https://cluster.test",
	}
	tj, err := ReadTrainJobs(context.Background(), cl, ShippedRuntimesOf(fabric.GIB, "a3-ultragpu-8g"), deployed)
	if err != nil {
		t.Fatal(err)
	}
	if len(tj.Jobs) != 1 || tj.Jobs[0].Name != "llama" || tj.Jobs[0].Deployed == nil || tj.Jobs[0].Snapshot == nil {
		t.Fatalf("read %+v, want team-a/llama with its snapshot and the deployed runtime", tj.Jobs)
	}
	has(t, CheckTrainJobs(tj), Warn, "trainjob-wiring", "team-a/llama", "NCCL_NET")
}
