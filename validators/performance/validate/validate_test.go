package validate

import (
	"slices"
	"strings"
	"testing"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tcpxogen/tcpxogen/validators/performance/pool"
)

// Input that is wrong without looking at a cluster exits 2, before
// connecting.
func TestBadInputExits2WithoutConnecting(t *testing.T) {
	badRecipe := writeFile(t, "recipe.yaml", strings.Replace(readFile(t, recipePath(declared)), "value: \">= 300\"", "value: \"300 GB/s\"", 1))
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no recipe", []string{"--benchmark-image", pinnedImage}, []string{"--recipe is required"}},
		{"recipe not found", []string{"--recipe", "no-such.yaml", "--benchmark-image", pinnedImage}, []string{"no-such.yaml", "check the --recipe path"}},
		{"bad recipe", []string{"--recipe", badRecipe, "--benchmark-image", pinnedImage}, []string{badRecipe, "constraints[0].value"}},
		{"benchmark image by tag", []string{"--recipe", recipePath(declared), "--benchmark-image", "nvcr.io/example/nccl-tests:2.16.4"}, []string{"--benchmark-image", "not pinned by digest", "has no digest"}},
		{"benchmark image without tag", []string{"--recipe", recipePath(declared), "--benchmark-image", "nvcr.io/example/nccl-tests@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}, []string{"has no tag"}},
		{"one node", []string{"--recipe", recipePath(declared), "--benchmark-image", pinnedImage, "--nodes", "1"}, []string{"--nodes 1", "at least 2"}},
		{"bad namespace", []string{"--recipe", recipePath(declared), "--benchmark-image", pinnedImage, "--namespace", "Bad_NS"}, []string{`namespace "Bad_NS"`}},
		{"no timeout", []string{"--recipe", recipePath(declared), "--benchmark-image", pinnedImage, "--timeout", "0s"}, []string{"--timeout 0s"}},
		{"trainer manifests missing", []string{"--recipe", recipePath(undeclared), "--benchmark-image", pinnedImage, "--trainer-manifests", "nope.yaml"}, []string{"--trainer-manifests", "nope.yaml", "kubectl kustomize 'https://github.com/kubeflow/trainer.git/manifests/overlays/manager?ref=v2.2.0'"}},
		{"results not writable", []string{"--recipe", recipePath(declared), "--benchmark-image", pinnedImage, "--out", recipePath(declared)}, []string{"--out:", "give a directory the results can be written to"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := validate(t, noConnect(t), tc.args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUsage, stderr)
			}
			if stdout != "" {
				t.Errorf("bad input printed a plan:\n%s", stdout)
			}
			contains(t, "stderr", stderr, tc.want...)
		})
	}
}

func TestTrainerManifestsMustBeThePinnedRelease(t *testing.T) {
	good := readFile(t, trainerManifests)
	for _, tc := range []struct {
		name, from, to string
		want           []string
	}{
		{"another trainer release", "trainer-controller-manager:v2.2.0", "trainer-controller-manager:v2.1.0", []string{"is not the pinned Kubeflow Trainer v2.2.0", "no Deployment runs the pinned controller image ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.2.0"}},
		{"another JobSet release", "jobset/jobset:v0.11.0", "jobset/jobset:v0.10.1", []string{"no Deployment runs the JobSet controller v0.11.0"}},
		{"no JobSet CRD", "name: jobsets.jobset.x-k8s.io", "name: jobsets.example.com", []string{"no CustomResourceDefinition jobsets.jobset.x-k8s.io"}},
		{"an object without a name", "name: validator.trainer.kubeflow.org", "labels: {}", []string{"document 5 has no apiVersion, kind or metadata.name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(good, tc.from) {
				t.Fatalf("the excerpt no longer contains %q", tc.from)
			}
			p := writeFile(t, "trainer.yaml", strings.Replace(good, tc.from, tc.to, 1))
			code, _, stderr := validate(t, noConnect(t), "--recipe", recipePath(undeclared), "--benchmark-image", pinnedImage, "--trainer-manifests", p)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitUsage, stderr)
			}
			contains(t, "stderr", stderr, tc.want...)
		})
	}
}

func TestTrainerManifestsApplyOrder(t *testing.T) {
	objs, err := loadTrainerManifests(trainerManifests, inputs(t).BOM)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, describe(o))
	}
	want := []string{
		"Namespace kubeflow-system",
		"CustomResourceDefinition clustertrainingruntimes.trainer.kubeflow.org",
		"CustomResourceDefinition trainingruntimes.trainer.kubeflow.org",
		"CustomResourceDefinition trainjobs.trainer.kubeflow.org",
		"CustomResourceDefinition jobsets.jobset.x-k8s.io",
		"ServiceAccount kubeflow-system/kubeflow-trainer-controller-manager",
		"Deployment kubeflow-system/jobset-controller-manager",
		"Deployment kubeflow-system/kubeflow-trainer-controller-manager",
		"ValidatingWebhookConfiguration validator.trainer.kubeflow.org",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("apply order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// completeCluster is a declared-and-complete cluster on fakes: the trainer's
// CRDs and controllers, two GPU nodes, the namespace, and the shipped runtime
// as the recipe renders it (changed by change, when given).
func completeCluster(t *testing.T, change func(rt *trainer.ClusterTrainingRuntime)) *fakeCluster {
	t.Helper()
	rt := shippedFor(t, declared)
	if change != nil {
		change(rt)
	}
	kube := append(append(gpuNodes(t, declared, 2), controllers()...), namespace("default"))
	return newFakeCluster(t, kube, establishedCRDs(t), []runtime.Object{unstructuredOf(t, rt)})
}

func TestDryRunOnFakes(t *testing.T) {
	f := completeCluster(t, nil)
	code, stdout, stderr := dryRun(t, f.connect, declared)
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, stderr, stdout)
	}
	contains(t, "plan", stdout,
		"trainer lifecycle: use-declared",
		"installs nothing and deletes nothing",
		"GPU pool: ok",
		"cluster fabric (tcpxogen check cluster): ok",
		"  2 GPU nodes, all nvidia-h100-mega-80gb with 8 GPUs and the recipe's 8 GPU-NIC networks (gpu-nic-1, ",
		"shipped runtime: ClusterTrainingRuntime torch-distributed-tcpxo: ok",
		"  would create TrainingRuntime default/nccl-tests-tcpxo-",
		"    image "+pinnedImage+"; 2 nodes × 8 ranks (one per GPU); all_reduce_perf 1K..16G; wiring equal to the shipped runtime",
		"  would create TrainJob default/nccl-tests-tcpxo-",
		"; nothing of the trainer",
		"  floor: nccl-all-reduce-bw >= 300 GB/s (recipe); passes at >= 270 GB/s (0.9 × declared)",
		"  runtimeSource: shipped\n",
		"dry run: nothing was created, changed or deleted",
	)
	if w := f.writes(); len(w) > 0 {
		t.Errorf("the dry run wrote to the cluster: %v", w)
	}
}

func TestAgreementFailure(t *testing.T) {
	f := completeCluster(t, func(rt *trainer.ClusterTrainingRuntime) {
		// A deployment by hand that dropped one NIC from NCCL's list.
		env := rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Env
		for i := range env {
			if env[i].Name == "NCCL_FASTRAK_IFNAME" {
				env[i].Value = "eth1,eth2,eth3,eth4,eth5,eth6,eth7"
			}
		}
	})
	code, stdout, stderr := dryRun(t, f.connect, declared)
	if code != exitFailure {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitFailure, stderr)
	}
	diff := `spec.template.spec.replicatedJobs[name=node].template.spec.template.spec.containers[name=node].env[name=NCCL_FASTRAK_IFNAME].value: deployed "eth1,eth2,eth3,eth4,eth5,eth6,eth7" vs rendered "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8"`
	contains(t, "stderr", stderr,
		"validation refused on https://fake.example, nothing was changed",
		"shipped runtime: the deployed ClusterTrainingRuntime torch-distributed-tcpxo does not agree with what the recipe's mapping renders",
		diff,
		"tcpxogen render runtime --interfaces eth1=gpu-nic-1,eth2=gpu-nic-2,eth3=gpu-nic-3,eth4=gpu-nic-4,eth5=gpu-nic-5,eth6=gpu-nic-6,eth7=gpu-nic-7,eth8=gpu-nic-8 | kubectl replace -f -",
	)
	contains(t, "plan", stdout,
		"shipped runtime: ClusterTrainingRuntime torch-distributed-tcpxo: FAILED",
		"differs from what the recipe's mapping renders in 1 place(s):\n    "+diff,
		"benchmark: not planned",
		"refused: 1 problem(s)",
	)
	if strings.Contains(stdout, "runtimeSource: shipped") {
		t.Error("a disagreeing runtime was still classified shipped")
	}
	if w := f.writes(); len(w) > 0 {
		t.Errorf("a refused run wrote to the cluster: %v", w)
	}
}

func TestShippedRuntimeNotDeployed(t *testing.T) {
	kube := append(append(gpuNodes(t, declared, 2), controllers()...), namespace("default"))
	f := newFakeCluster(t, kube, establishedCRDs(t), nil)
	code, _, stderr := dryRun(t, f.connect, declared)
	if code != exitFailure {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	contains(t, "stderr", stderr, "ClusterTrainingRuntime torch-distributed-tcpxo is not deployed",
		"render it from the recipe's mapping and apply it: tcpxogen render runtime --interfaces eth1=gpu-nic-1,eth2=gpu-nic-2,eth3=gpu-nic-3,eth4=gpu-nic-4,eth5=gpu-nic-5,eth6=gpu-nic-6,eth7=gpu-nic-7,eth8=gpu-nic-8 | kubectl apply -f -")
}

// Every problem is reported at once, so one run shows everything to fix.
func TestMixedPoolAndMissingNamespace(t *testing.T) {
	nodes := gpuNodes(t, declared, 2)
	small := nodes[2].(*corev1.Node)
	small.Status.Allocatable[pool.ResourceGPU] = *resource.NewQuantity(4, resource.DecimalSI)
	kube := append(nodes, controllers()...)
	f := newFakeCluster(t, kube, establishedCRDs(t), []runtime.Object{unstructuredOf(t, shippedFor(t, declared))})
	code, stdout, stderr := dryRun(t, f.connect, declared, "--namespace", "bench")
	if code != exitFailure {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	contains(t, "stderr", stderr,
		"1. GPU pool: the GPU nodes are not one homogeneous pool",
		"not on a3mega-pool-2 (4)",
		"2. namespace: namespace bench does not exist: create it (kubectl create namespace bench)",
	)
	contains(t, "plan", stdout, "GPU pool: FAILED", "namespace: FAILED", "refused: 2 problem(s)")
}

func TestTooFewGPUNodes(t *testing.T) {
	kube := append(append(gpuNodes(t, declared, 2), controllers()...), namespace("default"))
	f := newFakeCluster(t, kube, establishedCRDs(t), []runtime.Object{unstructuredOf(t, shippedFor(t, declared))})
	code, _, stderr := dryRun(t, f.connect, declared, "--nodes", "4")
	if code != exitFailure {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	contains(t, "stderr", stderr, "the benchmark spans --nodes 4 GPU nodes but the pool has 2: pass --nodes 2")
}

// The install row without --trainer-manifests renders the pinned trainer
// from its Go module and plans to install that.
func TestInstallRendersPinnedTrainer(t *testing.T) {
	kube := append(gpuNodes(t, undeclared, 2), namespace("default"))
	f := newFakeCluster(t, kube, nil, nil)
	code, stdout, stderr := dryRun(t, f.connect, undeclared)
	if code != exitOK {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitOK, stderr)
	}
	contains(t, "plan", stdout, "the pinned trainer v2.2.0, from "+renderedTrainer)
}

func TestConnectionErrors(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // not in a pod, whatever runs the test
	args := []string{"--recipe", recipePath(declared), "--benchmark-image", pinnedImage, "--dry-run"}

	code, _, stderr := validate(t, Connect, append(args, "--kubeconfig", "no-such-kubeconfig")...)
	if code != exitUsage {
		t.Errorf("missing --kubeconfig: exit %d; stderr:\n%s", code, stderr)
	}
	contains(t, "stderr", stderr, "no-such-kubeconfig", "check --kubeconfig")

	t.Setenv("KUBECONFIG", writeFile(t, "empty", ""))
	t.Setenv("HOME", t.TempDir())
	code, _, stderr = validate(t, Connect, args...)
	if code != exitUsage {
		t.Errorf("no configuration: exit %d; stderr:\n%s", code, stderr)
	}
	contains(t, "stderr", stderr, "no cluster to validate", "pass --kubeconfig FILE, set KUBECONFIG")

	// Port 1 refuses connections at once.
	kubeconfig := writeFile(t, "kubeconfig", `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`)
	code, stdout, stderr := validate(t, Connect, append(args, "--kubeconfig", kubeconfig)...)
	if code != exitFailure {
		t.Errorf("unreachable server: exit %d; stderr:\n%s", code, stderr)
	}
	contains(t, "stderr", stderr, "cannot reach the API server at http://127.0.0.1:1", "check the kubeconfig context")
	if stdout != "" {
		t.Errorf("printed a plan without a cluster:\n%s", stdout)
	}
}

// A strict ">" floor is judged like ">=": busbw passes at 0.9 × the declared
// value either way, and the plan says so.
func TestFloorFromRecipe(t *testing.T) {
	rec := loadRecipe(t, "gke-h100-trainer-declared.yaml")
	f, err := floorOf(rec)
	if err != nil {
		t.Fatal(err)
	}
	v := &validation{rec: rec, floor: f}
	if got := floorText(v); got != "> 320.5" {
		t.Errorf("floorText = %q", got)
	}
	if f.GBps != 320.5 || f.Threshold() != 288.45 {
		t.Errorf("floor %+v, threshold %v", f, f.Threshold())
	}
}

// editNICs rewrites a GPU node's nic-info annotation (GKE's format).
func editNICs(t *testing.T, n *corev1.Node, edit func(networkv1.NICInfoAnnotation) networkv1.NICInfoAnnotation) {
	t.Helper()
	info, err := networkv1.ParseNICInfoAnnotation(n.Annotations[networkv1.NICInfoAnnotationKey])
	if err != nil {
		t.Fatal(err)
	}
	raw, err := networkv1.MarshalNICInfoAnnotation(edit(info))
	if err != nil {
		t.Fatal(err)
	}
	n.Annotations[networkv1.NICInfoAnnotationKey] = raw
}

// Preflight runs check cluster's checks and refuses a pool they fail, also
// where the pool check passes: every recipe network attached, but not on
// the NIC the runtime's interface mirrors, or an installer upgraded apart
// from the BOM on one node (issue 20).
func TestPreflightRefusesWhatCheckClusterFails(t *testing.T) {
	swapped := func(info networkv1.NICInfoAnnotation) networkv1.NICInfoAnnotation {
		// gpu-nic-1's IP on eth2 and gpu-nic-2's on eth1: names that do
		// not follow the NICs.
		info[1].BirthIP, info[2].BirthIP = info[2].BirthIP, info[1].BirthIP
		return info
	}
	for _, c := range []struct {
		name  string
		edit  func(t *testing.T, objs []runtime.Object)
		pool  bool // the pool check passes too
		wants []string
	}{{
		name: "networks swapped on one node",
		edit: func(t *testing.T, objs []runtime.Object) { editNICs(t, objs[1].(*corev1.Node), swapped) },
		pool: true,
		wants: []string{
			"FAIL topology a3mega-pool-1: the GPU NICs carry eth1=gpu-nic-2,eth2=gpu-nic-1,",
			"where the recipe maps eth1=gpu-nic-1,eth2=gpu-nic-2,",
		},
	}, {
		name: "networks swapped on every node",
		edit: func(t *testing.T, objs []runtime.Object) {
			editNICs(t, objs[1].(*corev1.Node), swapped)
			editNICs(t, objs[2].(*corev1.Node), swapped)
		},
		pool:  true,
		wants: []string{"FAIL topology a3mega-pool-1: the GPU NICs carry", "FAIL topology a3mega-pool-2: the GPU NICs carry"},
	}, {
		name: "installer drifted on one node",
		edit: func(t *testing.T, objs []runtime.Object) {
			i := slices.IndexFunc(objs, func(o runtime.Object) bool {
				p, ok := o.(*corev1.Pod)
				return ok && p.Spec.NodeName == "a3mega-pool-2"
			})
			if i < 0 {
				t.Fatal("no installer pod on a3mega-pool-2 in the fixture")
			}
			pod := objs[i].(*corev1.Pod)
			// A node pool upgraded on its own, to an installer the BOM
			// does not pin.
			pod.Spec.InitContainers[0].Image = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v9.9.9@sha256:" + strings.Repeat("1", 64)
		},
		pool: true,
		wants: []string{
			"FAIL installer a3mega-pool-2: the node runs installer v9.9.9, but bom/bom.yaml pins " + inputs(t).BOM.Images.Installer.Version,
			"FAIL installer: the nodes run different installers",
		},
	}, {
		name: "a gVNIC in a GPU NIC's slot on every node",
		edit: func(t *testing.T, objs []runtime.Object) {
			for _, o := range objs[1:3] {
				n := o.(*corev1.Node)
				editNICs(t, n, func(info networkv1.NICInfoAnnotation) networkv1.NICInfoAnnotation {
					info[1] = networkv1.NICInfoRef{BirthName: "gve0", BirthIP: "172.16.0.2", PCIAddress: info[1].PCIAddress}
					return info
				})
				north, err := networkv1.ParseNorthInterfacesAnnotation(n.Annotations[networkv1.NorthInterfacesAnnotationKey])
				if err != nil {
					t.Fatal(err)
				}
				north[0] = networkv1.NorthInterface{Network: "gvnic-net", IpAddress: "172.16.0.2"}
				raw, err := networkv1.MarshalNorthInterfacesAnnotation(north)
				if err != nil {
					t.Fatal(err)
				}
				n.Annotations[networkv1.NorthInterfacesAnnotationKey] = raw
				for _, l := range []corev1.ResourceList{n.Status.Capacity, n.Status.Allocatable} {
					delete(l, networkv1.NetworkResourceKeyPrefix+"gpu-nic-1")
					l[networkv1.NetworkResourceKeyPrefix+"gvnic-net"] = *resource.NewQuantity(1, resource.DecimalSI)
				}
			}
		},
		wants: []string{
			"FAIL topology a3mega-pool-1:",
			"network gvnic-net sits on host NIC gve0 (0000:06:00.0), which is not a GPU NIC",
			"a gVNIC or other additional network on the GPU node pool takes a GPU NIC's place",
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			kube := append(append(gpuNodes(t, declared, 2), controllers()...), namespace("default"))
			c.edit(t, kube)
			f := newFakeCluster(t, kube, establishedCRDs(t), []runtime.Object{unstructuredOf(t, shippedFor(t, declared))})
			code, stdout, stderr := dryRun(t, f.connect, declared)
			if code != exitFailure {
				t.Fatalf("exit %d, want %d; stderr:\n%s\nstdout:\n%s", code, exitFailure, stderr, stdout)
			}
			contains(t, "plan", stdout, append([]string{"cluster fabric (tcpxogen check cluster): FAILED"}, c.wants...)...)
			contains(t, "stderr", stderr, "cluster fabric: the GPU pool fails", "tcpxogen check cluster --recipe FILE -v")
			if c.pool && !strings.Contains(stdout, "GPU pool: ok") {
				t.Errorf("the pool check failed too, so the case does not show what check cluster adds:\n%s", stdout)
			}
			if strings.Contains(stdout, "would create TrainingRuntime") && !strings.Contains(stdout, "refused") {
				t.Errorf("a pool that fails check cluster was planned for:\n%s", stdout)
			}
			if w := f.writes(); len(w) > 0 {
				t.Errorf("a refused run wrote to the cluster: %v", w)
			}
		})
	}
}
