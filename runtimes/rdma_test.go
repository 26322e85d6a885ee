package runtimes

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated/gib"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

func loadGIBInputs(t *testing.T) *Inputs {
	t.Helper()
	in := loadInputs(t)
	in.GIB = gib.Facts()
	return in
}

// googleRDMAAnnotation is the networking.gke.io/interfaces list of
// Google's gIB test pods (container-engine-accelerators
// gpudirect-rdma/nccl-test.yaml and nccl-test-a4.yaml at dfe0f210): eth0 on
// default, then eth2..eth9 on rdma-0..rdma-7.
const googleRDMAAnnotation = `[{"interfaceName":"eth0","network":"default"},{"interfaceName":"eth2","network":"rdma-0"},{"interfaceName":"eth3","network":"rdma-1"},{"interfaceName":"eth4","network":"rdma-2"},{"interfaceName":"eth5","network":"rdma-3"},{"interfaceName":"eth6","network":"rdma-4"},{"interfaceName":"eth7","network":"rdma-5"},{"interfaceName":"eth8","network":"rdma-6"},{"interfaceName":"eth9","network":"rdma-7"}]`

// The gIB runtime carries the wiring of Google's gIB test pods element by
// element where they agree (annotations, host paths, mount points,
// LD_LIBRARY_PATH, eight GPUs, no hostNetwork, no privilege, no
// capability), plus what Google's pods leave to their command: the env
// set_nccl_env.sh exports, as direct env.
func TestRDMARuntimeMatchesGooglesPods(t *testing.T) {
	in := loadGIBInputs(t)
	for _, mt := range fabric.GIB.MachineTypes {
		t.Run(mt.Name, func(t *testing.T) {
			rt, err := RDMARuntime(in, RDMAOptions{Interfaces: ExampleRDMAInterfaces(), MachineType: mt.Name})
			if err != nil {
				t.Fatal(err)
			}
			if want := "torch-distributed-rdma-" + mt.Name; rt.Name != want {
				t.Errorf("name %s, want %s", rt.Name, want)
			}
			pod := rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template
			if got := pod.Annotations[AnnotationDefaultInterface]; got != "eth0" {
				t.Errorf("default interface %q, want eth0", got)
			}
			if got := pod.Annotations[AnnotationInterfaces]; got != googleRDMAAnnotation {
				t.Errorf("interfaces annotation\n got %s\nwant %s", got, googleRDMAAnnotation)
			}
			if len(pod.Annotations) != 2 {
				t.Errorf("annotations %v: gIB has no NRI device annotation", pod.Annotations)
			}
			spec := pod.Spec
			if spec.HostNetwork || len(spec.InitContainers) != 0 || len(spec.Containers) != 1 || spec.Containers[0].Name != NodeContainer {
				t.Fatalf("pod: hostNetwork %v, init %d, containers %v; want the node container alone, first (RDMA devices go only there)",
					spec.HostNetwork, len(spec.InitContainers), spec.Containers)
			}
			hostPaths := map[string]string{}
			for _, v := range spec.Volumes {
				if v.HostPath != nil {
					hostPaths[v.Name] = v.HostPath.Path
				}
			}
			node := spec.Containers[0]
			mounts := map[string]string{}
			for _, m := range node.VolumeMounts {
				mounts[m.MountPath] = hostPaths[m.Name]
			}
			for mount, host := range map[string]string{"/usr/local/nvidia": "/home/kubernetes/bin/nvidia", "/usr/local/gib": "/home/kubernetes/bin/gib"} {
				if mounts[mount] != host {
					t.Errorf("%s mounts host %q, want %s", mount, mounts[mount], host)
				}
			}
			if _, ok := mounts["/dev/shm"]; !ok {
				t.Errorf("no /dev/shm mount")
			}
			if q := node.Resources.Limits[GPUResource]; q.Value() != 8 {
				t.Errorf("GPU limit %v, want 8", q.String())
			}
			if sc := node.SecurityContext; sc != nil && (sc.Privileged != nil && *sc.Privileged || sc.Capabilities != nil) {
				t.Errorf("security context %+v: Google's gIB pods are unprivileged with no capability", sc)
			}
			if len(node.Env) == 0 || node.Env[0] != (corev1.EnvVar{Name: "LD_LIBRARY_PATH", Value: "/usr/local/nvidia/lib64"}) {
				t.Errorf("env starts %v, want LD_LIBRARY_PATH=/usr/local/nvidia/lib64 as Google's pods set it", node.Env[:min(1, len(node.Env))])
			}
			prof, ok := in.GIB.Profile(mt.Name)
			if !ok || len(prof) == 0 {
				t.Fatalf("the generated gIB facts have no env for %s", mt.Name)
			}
			for i, v := range prof {
				if node.Env[i+1] != (corev1.EnvVar{Name: v.Name, Value: v.Value}) {
					t.Errorf("env[%d] = %v, want the script's %s=%s", i+1, node.Env[i+1], v.Name, v.Value)
				}
			}
		})
	}
}

// The machine type decides: the runtime for one machine type selects its
// nodes and no other, not A3 High or Edge (nvidia-h100-80gb), not A3 Mega,
// not the other gIB machine type.
func TestRDMARuntimeSelectsItsMachineTypeOnly(t *testing.T) {
	in := loadGIBInputs(t)
	nodes := map[string]map[string]string{}
	for _, f := range fabric.Fabrics() {
		for _, m := range f.MachineTypes {
			nodes[m.Name] = map[string]string{fabric.InstanceTypeLabel: m.Name, fabric.AcceleratorLabel: m.Accelerator}
		}
	}
	nodes["a3-highgpu-8g"] = map[string]string{fabric.InstanceTypeLabel: "a3-highgpu-8g", fabric.AcceleratorLabel: "nvidia-h100-80gb"}
	nodes["h200-label-on-another-type"] = map[string]string{fabric.InstanceTypeLabel: "a3-edgegpu-8g", fabric.AcceleratorLabel: "nvidia-h200-141gb"}
	for _, mt := range fabric.GIB.MachineTypes {
		rt, err := RDMARuntime(in, RDMAOptions{Interfaces: ExampleRDMAInterfaces(), MachineType: mt.Name})
		if err != nil {
			t.Fatal(err)
		}
		aff := nodeaffinity.GetRequiredNodeAffinity(&corev1.Pod{Spec: rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec})
		for name, labels := range nodes {
			match, err := aff.Match(&corev1.Node{ObjectMeta: metaWithLabels(labels)})
			if err != nil {
				t.Fatal(err)
			}
			if want := name == mt.Name; match != want {
				t.Errorf("runtime for %s matches a %s node: %v, want %v", mt.Name, name, match, want)
			}
		}
	}
}

func TestRDMARuntimeRefuses(t *testing.T) {
	in := loadGIBInputs(t)
	for _, tc := range []struct {
		name string
		opts RDMAOptions
		want string
	}{
		{"no mapping", RDMAOptions{MachineType: "a4-highgpu-8g"}, "eth2=<network>"},
		{"a TCPXO mapping", RDMAOptions{Interfaces: ExampleInterfaces(), MachineType: "a4-highgpu-8g"}, "TCPXO one (eth1..eth8)"},
		{"no machine type", RDMAOptions{Interfaces: ExampleRDMAInterfaces()}, `machine type "" is not served by the gIB fabric: use one of a3-ultragpu-8g, a4-highgpu-8g`},
		{"A3 Mega", RDMAOptions{Interfaces: ExampleRDMAInterfaces(), MachineType: "a3-megagpu-8g"}, "not served by the gIB fabric"},
		{"unpinned worker image", RDMAOptions{Interfaces: ExampleRDMAInterfaces(), MachineType: "a4-highgpu-8g", WorkerImage: "pytorch/pytorch:latest"}, "digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := RDMARuntime(in, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) || rt != nil {
				t.Fatalf("got %v, %v; want an error containing %q", rt, err, tc.want)
			}
		})
	}
	// Facts without the machine type's env (a stale generated package)
	// render nothing.
	stale := loadGIBInputs(t)
	stale.GIB.MachineProfiles = stale.GIB.MachineProfiles[:1]
	missing := fabric.GIB.MachineTypes[1].Name
	if _, err := RDMARuntime(stale, RDMAOptions{Interfaces: ExampleRDMAInterfaces(), MachineType: missing}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("facts without %s's env: %v", missing, err)
	}
}

// The gIB installer DaemonSet is Google's nccl-rdma-installer
// (gpudirect-rdma/nccl-rdma-installer.yaml at dfe0f210) with the images
// pinned by digest: the same name, namespace, accelerator affinity, host
// paths, mount points and install-then-copy program.
func TestRDMAComponentsMatchGooglesInstaller(t *testing.T) {
	in := loadGIBInputs(t)
	dss := RDMAComponents(in)
	if len(dss) != 1 {
		t.Fatalf("%d DaemonSets, want the installer alone (gIB needs no NRI injector)", len(dss))
	}
	ds := dss[0]
	if ds.Name != "nccl-rdma-installer" || ds.Namespace != "kube-system" {
		t.Errorf("%s/%s, want kube-system/nccl-rdma-installer", ds.Namespace, ds.Name)
	}
	spec := ds.Spec.Template.Spec
	if !spec.HostNetwork || !spec.HostPID || spec.PriorityClassName != "system-node-critical" {
		t.Errorf("hostNetwork %v hostPID %v priority %q", spec.HostNetwork, spec.HostPID, spec.PriorityClassName)
	}
	req := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions
	if len(req) != 1 || req[0].Key != "cloud.google.com/gke-accelerator" || !slices.Equal(req[0].Values, []string{"nvidia-h200-141gb", "nvidia-b200"}) {
		t.Errorf("affinity %+v, want Google's accelerators nvidia-h200-141gb, nvidia-b200", req)
	}
	vols := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		vols[v.Name] = v
	}
	if v := vols["library-dir-host"].HostPath; v == nil || v.Path != "/home/kubernetes/bin/nvidia/lib64" || v.Type == nil || *v.Type != corev1.HostPathDirectoryOrCreate {
		t.Errorf("library-dir-host %+v", v)
	}
	if v := vols["gib"].HostPath; v == nil || v.Path != "/home/kubernetes/bin/gib" {
		t.Errorf("gib %+v", v)
	}
	if len(spec.InitContainers) != 1 {
		t.Fatalf("%d init containers", len(spec.InitContainers))
	}
	c := spec.InitContainers[0]
	if c.Image != in.GIB.InstallerImage || c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
		t.Errorf("installer %s privileged %+v", c.Image, c.SecurityContext)
	}
	if _, err := bom.ParsePinned(c.Image); err != nil {
		t.Errorf("installer image not pinned: %v", err)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if mounts["library-dir-host"] != "/usr/local/home/kubernetes/bin/nvidia/lib64" || mounts["gib"] != "/usr/local/home/kubernetes/bin/gib" {
		t.Errorf("mounts %v", mounts)
	}
	prog := c.Command[len(c.Command)-1]
	for _, line := range []string{
		strings.Join(in.GIB.InstallerEntrypoint, " ") + " install --install-nccl",
		"cp -r /var/lib/gib/lib64/. /usr/local/home/kubernetes/bin/nvidia/lib64",
		"cp -r /var/lib/gib/. /usr/local/home/kubernetes/bin/gib",
	} {
		if !strings.Contains(prog, line+"\n") {
			t.Errorf("install program lacks %q:\n%s", line, prog)
		}
	}
	if len(spec.Containers) != 1 || spec.Containers[0].Image != in.BOM.Images.Pause.Reference {
		t.Errorf("containers %+v, want the BOM's pause", spec.Containers)
	}
}

// A TCPXO mapping parsed where an RDMA one is expected is refused by the
// parser itself (eth1..eth8 is not the RDMA NIC set).
func TestExampleRDMAInterfacesAreRDMA(t *testing.T) {
	if ExampleRDMAInterfaces().Layout() != interfaces.RDMA {
		t.Fatal("the gIB goldens' example mapping is not an RDMA one")
	}
}

func metaWithLabels(labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Labels: labels}
}

// gIB v1.1.2's notes name a minimum CUDA runtime the BOM's CUDA 12 worker
// does not meet, so the runtime ships no image unless one is given: a
// TrainJob brings its own, and a pod without one is refused by the API
// server rather than run on an unsupported CUDA.
func TestRDMARuntimeImage(t *testing.T) {
	in := loadGIBInputs(t)
	rt, err := RDMARuntime(in, RDMAOptions{Interfaces: ExampleRDMAInterfaces(), MachineType: "a4-highgpu-8g"})
	if err != nil {
		t.Fatal(err)
	}
	if img := rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Image; img != "" {
		t.Errorf("default image %q, want none", img)
	}
	const ref = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	rt, err = RDMARuntime(in, RDMAOptions{Interfaces: ExampleRDMAInterfaces(), MachineType: "a4-highgpu-8g", WorkerImage: ref})
	if err != nil {
		t.Fatal(err)
	}
	if img := rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Image; img != ref {
		t.Errorf("image %q, want %s", img, ref)
	}
}
