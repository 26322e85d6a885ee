package runtimes

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/generated/tcpxo"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/runtimes/interfaces"
)

func loadInputs(t *testing.T) *Inputs {
	t.Helper()
	in, err := LoadInputs("..", tcpxo.Facts())
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestRuntimeRequiresMapping(t *testing.T) {
	_, err := TorchRuntime(loadInputs(t), Options{})
	if err == nil || !strings.Contains(err.Error(), "eth1=<network>") {
		t.Fatalf("a runtime without the GPU-NIC mapping must not render, got %v", err)
	}
}

func TestRuntimeRejectsUnpinnedWorker(t *testing.T) {
	_, err := TorchRuntime(loadInputs(t), Options{Interfaces: ExampleInterfaces(), WorkerImage: "pytorch/pytorch:latest"})
	if err == nil || !strings.Contains(err.Error(), "digest") {
		t.Fatalf("want a digest error, got %v", err)
	}
}

func TestRuntimeRejectsUnknownProfile(t *testing.T) {
	if _, err := TorchRuntime(loadInputs(t), Options{Interfaces: ExampleInterfaces(), Profile: "fast"}); err == nil {
		t.Fatal("unknown profile accepted")
	}
}

func nodePod(t *testing.T, opts Options) corev1.PodTemplateSpec {
	t.Helper()
	rt, err := TorchRuntime(loadInputs(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	return rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template
}

func envMap(env []corev1.EnvVar) map[string]string {
	m := map[string]string{}
	for _, e := range env {
		m[e.Name] = e.Value
	}
	return m
}

// The worker env is the generated profile plus the reviewed overrides and
// nothing else, for both profiles.
func TestWorkerEnvIsProfilePlusOverrides(t *testing.T) {
	for name, prof := range map[string][]facts.EnvVar{ProfileDefault: tcpxo.DefaultProfile(), ProfileSimple: tcpxo.SimpleProfile()} {
		t.Run(name, func(t *testing.T) {
			pod := nodePod(t, Options{Interfaces: ExampleInterfaces(), Profile: name})
			env := envMap(pod.Spec.Containers[0].Env)
			for _, v := range prof {
				if env[v.Name] != v.Value {
					t.Errorf("%s = %q, profile says %q", v.Name, env[v.Name], v.Value)
				}
			}
			if env["NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY"] != ApertureDevices {
				t.Error("non-privileged LLCM directory override missing")
			}
			// Google's README ("NCCL configs") has a workload set
			// NCCL_LIB_DIR="/usr/local/nvidia/lib64" and source the profile
			// from it; the value is the generated library dir.
			if got := env[EnvLibDir]; got != "/usr/local/nvidia/lib64" {
				t.Errorf("NCCL_LIB_DIR = %q, want Google's /usr/local/nvidia/lib64", got)
			}
			if got := env[EnvLibDir]; got != tcpxo.LibDir {
				t.Errorf("NCCL_LIB_DIR = %q, want the generated library dir %s", got, tcpxo.LibDir)
			}
			if e := pod.Spec.Containers[0].Env; len(e) == 0 || e[0].Name != EnvLibDir {
				t.Errorf("NCCL_LIB_DIR is not first: %v", e)
			}
			if len(env) != len(prof)+2 {
				t.Errorf("env has %d variables, want the profile's %d plus one reviewed addition and NCCL_LIB_DIR", len(env), len(prof))
			}
		})
	}
}

func TestWiring(t *testing.T) {
	m, err := interfaces.Parse("eth8=h,eth7=g,eth6=f,eth5=e,eth4=d,eth3=c,eth2=b,eth1=a")
	if err != nil {
		t.Fatal(err)
	}
	pod := nodePod(t, Options{Interfaces: m, NodeSelector: map[string]string{"pool": "a3"},
		Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}})
	ann := pod.Annotations[AnnotationInterfaces]
	if !strings.HasPrefix(ann, `[{"interfaceName":"eth0","network":"default"},{"interfaceName":"eth1","network":"a"}`) {
		t.Errorf("interfaces annotation %s: eth0→default must come first, then eth1 by its explicit pair", ann)
	}
	if pod.Annotations[AnnotationDefaultInterface] != "eth0" || !strings.Contains(pod.Annotations[AnnotationDaemonDevices], "/dev/dmabuf_import_helper") {
		t.Errorf("annotations %v", pod.Annotations)
	}
	if pod.Spec.NodeSelector["pool"] != "a3" || len(pod.Spec.Tolerations) != 1 {
		t.Errorf("node selector / tolerations not applied: %v %v", pod.Spec.NodeSelector, pod.Spec.Tolerations)
	}
	d := pod.Spec.InitContainers[0]
	if d.Name != names.DaemonContainer || d.Image != tcpxo.DaemonImage || d.RestartPolicy == nil || *d.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Errorf("daemon sidecar: %+v", d)
	}
	// Release notes: --num_nics retired; round-3 facts (daemon >= v1.0.21):
	// --uid and --alsologtostderr retired, --enforce_kernel_ipv6_support
	// makes the daemon exit.
	for _, flag := range []string{"--num_nics", "--uid", "--alsologtostderr", "--enforce_kernel_ipv6_support"} {
		if slices.ContainsFunc(d.Args, func(a string) bool { return a == flag || strings.HasPrefix(a, flag+"=") }) {
			t.Errorf("the daemon gets %s, which daemon %s retired or rejects", flag, tcpxo.DaemonVersion)
		}
	}
	if d.StartupProbe == nil || !slices.Contains(d.StartupProbe.Exec.Command, HealthCheckFile) || envMap(d.Env)["HEALTH_CHECK_LOG_FILE"] != HealthCheckFile {
		t.Error("daemon readiness: startup probe and HEALTH_CHECK_LOG_FILE must agree")
	}
	node := pod.Spec.Containers[0]
	gpu := node.Resources.Limits[GPUResource]
	if gpu.Value() != GPUsPerNode || !slices.Contains(node.SecurityContext.Capabilities.Add, "IPC_LOCK") {
		t.Errorf("worker resources/caps: %v %v", node.Resources, node.SecurityContext)
	}
	mounts := map[string]bool{}
	for _, vm := range node.VolumeMounts {
		mounts[vm.MountPath] = true
	}
	for _, p := range []string{"/dev/shm", LibMountPath, ApertureDevices} {
		if !mounts[p] {
			t.Errorf("worker lacks mount %s", p)
		}
	}
}

func TestComponentsPinFromBOM(t *testing.T) {
	in := loadInputs(t)
	var images []string
	for _, ds := range Components(in) {
		for _, c := range append(ds.Spec.Template.Spec.InitContainers, ds.Spec.Template.Spec.Containers...) {
			images = append(images, c.Image)
		}
	}
	for _, want := range []string{in.BOM.Images.Installer.Reference, in.BOM.Images.Pause.Reference, in.BOM.Images.NRIInjector.Reference} {
		if !slices.Contains(images, want) {
			t.Errorf("components do not pull %s (have %v)", want, images)
		}
	}
	for _, img := range images {
		if !strings.Contains(img, "@sha256:") {
			t.Errorf("component image %s is not digest-pinned", img)
		}
	}
}

func TestEncodeJSONAndYAML(t *testing.T) {
	rt, err := TorchRuntime(loadInputs(t), Options{Interfaces: ExampleInterfaces()})
	if err != nil {
		t.Fatal(err)
	}
	j, err := Encode(FormatJSON, nil, rt)
	if err != nil || !strings.HasPrefix(string(j), "{") || !strings.Contains(string(j), `"kind": "ClusterTrainingRuntime"`) {
		t.Fatalf("json: %v %.80s", err, j)
	}
	if _, err := Encode("toml", nil, rt); err == nil {
		t.Fatal("unknown format accepted")
	}
	a, err := Encode(FormatYAML, nil, rt)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encode(FormatYAML, nil, rt)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) == 0 || string(a) != string(b) {
		t.Fatal("YAML output is not deterministic")
	}
}

func TestGoldenFilesExist(t *testing.T) {
	for _, rel := range []string{GoldenRuntime, GoldenComponents} {
		if _, err := os.Stat(filepath.Join("..", rel)); err != nil {
			t.Errorf("%s: %v (run go generate ./...)", rel, err)
		}
	}
}

func TestReferenceExplainsEveryElement(t *testing.T) {
	in := loadInputs(t)
	rt, err := TorchRuntime(in, Options{Interfaces: ExampleInterfaces()})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := Reference(rt, in.Overrides, in.Facts.PluginVersion)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range rows {
		kinds[r.Kind]++
		if r.Why == "" {
			t.Errorf("%s %s has no reason: add it to the why table", r.Kind, r.Name)
		}
	}
	if kinds["annotation"] != 3 || kinds["sidecar"] != 1 || kinds["volume"] != 5 || kinds["env"] != len(in.Facts.DefaultProfile)+2 {
		t.Errorf("reference rows by kind: %v", kinds)
	}
	ns := Namespaced(rt, "team-a", "mine")
	if ns.Kind != "TrainingRuntime" || ns.Namespace != "team-a" || ns.Name != "mine" || rt.Kind != "ClusterTrainingRuntime" {
		t.Errorf("namespaced copy: %s %s/%s (original now %s)", ns.Kind, ns.Namespace, ns.Name, rt.Kind)
	}
}
