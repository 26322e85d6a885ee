package validate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/validators/performance/pool"
	"github.com/tcpxogen/tcpxogen/validators/performance/recipe"
	"github.com/tcpxogen/tcpxogen/validators/schema"
)

// pinnedImage is a benchmark image pinned the way validate requires.
const pinnedImage = "us-docker.pkg.dev/example/nccl-tests/nccl-tests:2.16.4@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// The recipes of testdata/recipes.
const (
	declared   = "gke-h100.yaml"                    // declares the trainer
	undeclared = "gke-h100-trainer-undeclared.yaml" // does not
)

var (
	repoTestdata     = filepath.Join("..", "..", "..", "testdata")
	trainerManifests = filepath.Join("testdata", "kubeflow-trainer-v2.2.0-excerpt.yaml")
)

// trainingRuntimes is listed by tests to show that a dry run created none.
var trainingRuntimes = trainer.GroupVersion.WithResource("trainingruntimes")

func recipePath(name string) string { return filepath.Join(repoTestdata, "recipes", name) }

func loadRecipe(t testing.TB, name string) *recipe.Recipe {
	t.Helper()
	rec, err := recipe.Load(recipePath(name))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func inputs(t testing.TB) *runtimes.Inputs {
	t.Helper()
	root, err := bom.ResolveRoot("")
	if err != nil {
		t.Fatal(err)
	}
	in, err := shipped.LoadInputs(root)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// shippedFor renders torch-distributed-tcpxo from a recipe's mapping: what a
// user following the docs deploys.
func shippedFor(t testing.TB, recipeName string) *trainer.ClusterTrainingRuntime {
	t.Helper()
	rt, err := runtimes.TorchRuntime(inputs(t), runtimes.Options{Interfaces: loadRecipe(t, recipeName).Interfaces()})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// gpuNodes are n A3 Mega nodes as GKE publishes them (gke-networking-api,
// apis/network/v1): the recipe's GPU-NIC networks advertised as extended
// resources and on eth1..eth8 by north-interfaces and nic-info, at the PCI
// slots GKE reported on live a3-megagpu-8g nodes (round-3 facts), each with
// the pinned installer's pod; plus one CPU node, which the pool check must
// leave out.
func gpuNodes(t testing.TB, recipeName string, n int) []runtime.Object {
	t.Helper()
	slots := []string{"0000:06:00.0", "0000:07:00.0", "0000:0d:00.0", "0000:0e:00.0", "0000:86:00.0", "0000:87:00.0", "0000:8d:00.0", "0000:8e:00.0"}
	return poolNodes(t, recipeName, fabric.TCPXO, fabric.TCPXO.MachineTypes[0], "a3mega-pool", slots, "", n)
}

// gibNodes are n nodes of the gIB machine type mt as GKE publishes them
// for Google's setup: the recipe's networks (gvnic-1 on eth1, rdma-0..7 on
// eth2..eth9) at distinct PCI slots, the pinned nccl-rdma-installer's pod,
// a kubelet above the machine type's GKE floor; plus one CPU node.
func gibNodes(t testing.TB, recipeName string, mt fabric.MachineType, n int) []runtime.Object {
	t.Helper()
	slots := []string{"0000:0c:00.0", "0000:91:00.0", "0000:92:00.0", "0000:93:00.0", "0000:94:00.0", "0000:95:00.0", "0000:96:00.0", "0000:97:00.0", "0000:98:00.0"}
	return poolNodes(t, recipeName, fabric.GIB, mt, mt.Name+"-pool", slots, "v1.33.5-gke.1200000", n)
}

// poolNodes are n nodes of machine type mt (fabric f) named prefix-1..n:
// the recipe's networks advertised as extended resources and on the
// recipe's interfaces by north-interfaces and nic-info, at slots, each with
// the pinned installer's pod of f; plus one CPU node, which the pool check
// must leave out.
func poolNodes(t testing.TB, recipeName string, f fabric.Fabric, mt fabric.MachineType, prefix string, slots []string, kubelet string, n int) []runtime.Object {
	t.Helper()
	north := networkv1.NorthInterfacesAnnotation{}
	info := networkv1.NICInfoAnnotation{{BirthName: "eth0", BirthIP: "10.128.0.2", PCIAddress: "0000:00:05.0"}}
	resources := corev1.ResourceList{pool.ResourceGPU: *resource.NewQuantity(8, resource.DecimalSI)}
	for i, b := range loadRecipe(t, recipeName).Interfaces().Bindings() {
		ip := fmt.Sprintf("192.168.%d.2", i+1)
		north = append(north, networkv1.NorthInterface{Network: b.Network, IpAddress: ip})
		info = append(info, networkv1.NICInfoRef{BirthName: b.Interface, BirthIP: ip, PCIAddress: slots[i]})
		for _, r := range []string{b.Network, b.Network + ".IP"} {
			resources[corev1.ResourceName(networkv1.NetworkResourceKeyPrefix+r)] = *resource.NewQuantity(1, resource.DecimalSI)
		}
	}
	northJSON, err := networkv1.MarshalNorthInterfacesAnnotation(north)
	if err != nil {
		t.Fatal(err)
	}
	infoJSON, err := networkv1.MarshalNICInfoAnnotation(info)
	if err != nil {
		t.Fatal(err)
	}
	installer := inputs(t).BOM.Images.Installer.Reference
	if f.Name == fabric.GIB.Name {
		installer = inputs(t).BOM.Images.GIBInstaller.Reference
	}
	out := []runtime.Object{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu-pool-1"}}}
	var pods []runtime.Object
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i+1)
		out = append(out, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:   name,
				Labels: map[string]string{pool.LabelAccelerator: mt.Accelerator, fabric.InstanceTypeLabel: mt.Name},
				Annotations: map[string]string{
					networkv1.NorthInterfacesAnnotationKey: northJSON,
					networkv1.NICInfoAnnotationKey:         infoJSON,
				},
			},
			Status: corev1.NodeStatus{Capacity: resources.DeepCopy(), Allocatable: resources.DeepCopy(), NodeInfo: corev1.NodeSystemInfo{KubeletVersion: kubelet}},
		})
		pods = append(pods, &corev1.Pod{
			// The installer DaemonSet's pod (runtimes/components.yaml,
			// components-rdma.yaml).
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: f.InstallerDaemonSet + "-" + name, Labels: map[string]string{"k8s-app": f.InstallerDaemonSet}},
			Spec: corev1.PodSpec{
				NodeName:       name,
				InitContainers: []corev1.Container{{Name: f.InstallerDaemonSet, Image: installer}},
				Containers:     []corev1.Container{{Name: "pause", Image: "gke.gcr.io/pause:3.8"}},
			},
		})
	}
	// The nodes first: tests pick them by index.
	return append(out, pods...)
}

// gkeNetworks are the testdata recipes' GPU-NIC networks as GKE holds them
// once usable: a Device Network and its GKENetworkParamSet, both Ready.
func gkeNetworks(t testing.TB) []*unstructured.Unstructured {
	t.Helper()
	var names []string
	for _, r := range []string{declared, undeclared, gibRecipe} {
		for _, b := range loadRecipe(t, r).Interfaces().Bindings() {
			if !slices.Contains(names, b.Network) {
				names = append(names, b.Network)
			}
		}
	}
	now := metav1.Now()
	var out []*unstructured.Unstructured
	for _, n := range names {
		params := &networkv1.GKENetworkParamSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: networkv1.SchemeGroupVersion.String(), Kind: "GKENetworkParamSet"},
			ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec:       networkv1.GKENetworkParamSetSpec{VPC: "vpc-" + n, VPCSubnet: "subnet-" + n, DeviceMode: deviceMode(n)},
			Status:     networkv1.GKENetworkParamSetStatus{Conditions: []metav1.Condition{{Type: string(networkv1.GKENetworkParamSetStatusReady), Status: metav1.ConditionTrue, Reason: string(networkv1.GNPReady), LastTransitionTime: now}}},
		}
		net := &networkv1.Network{
			TypeMeta:   metav1.TypeMeta{APIVersion: networkv1.SchemeGroupVersion.String(), Kind: "Network"},
			ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec: networkv1.NetworkSpec{
				Type:          networkv1.DeviceNetworkType,
				ParametersRef: &networkv1.NetworkParametersReference{Group: networkv1.GroupName, Kind: "GKENetworkParamSet", Name: n},
			},
			Status: networkv1.NetworkStatus{Conditions: []metav1.Condition{{Type: string(networkv1.NetworkConditionStatusReady), Status: metav1.ConditionTrue, Reason: "NetworkReady", LastTransitionTime: now}}},
		}
		for _, o := range []any{params, net} {
			u, err := toUnstructured(o)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, u)
		}
	}
	return out
}

// deviceMode is the deviceMode of network n's GKENetworkParamSet: RDMA for
// the gIB recipe's rdma-* networks, NetDevice for the rest (TCPXO's GPU-NIC
// networks, gIB's gvnic-1).
func deviceMode(n string) networkv1.DeviceModeType {
	if strings.HasPrefix(n, "rdma-") {
		return networkv1.RDMA
	}
	return networkv1.NetDevice
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// controllers are the trainer's and JobSet's controller Deployments as the
// trainer v2.2.0 kustomize manifests label them, available.
func controllers() []runtime.Object {
	dep := func(name string, labels map[string]string) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kubeflow-system", Name: name, Labels: labels},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
			Status:     appsv1.DeploymentStatus{AvailableReplicas: 1},
		}
	}
	return []runtime.Object{
		dep("kubeflow-trainer-controller-manager", map[string]string{"app.kubernetes.io/name": "trainer", "app.kubernetes.io/component": "manager", "app.kubernetes.io/part-of": "kubeflow"}),
		dep("jobset-controller-manager", map[string]string{"control-plane": "controller-manager", "app.kubernetes.io/name": "jobset", "app.kubernetes.io/component": "manager", "app.kubernetes.io/part-of": "jobset"}),
	}
}

// jobsetCRD stands in for the JobSet release's CRD: Observe needs its name,
// nothing reads its schema.
const jobsetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: jobsets.jobset.x-k8s.io}
spec:
  group: jobset.x-k8s.io
  names: {kind: JobSet, listKind: JobSetList, plural: jobsets, singular: jobset}
  scope: Namespaced
  versions:
    - name: v1alpha2
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// crdFiles are the pinned trainer's CRDs (from the trainer module) and the
// JobSet CRD stand-in.
func crdFiles(t testing.TB) [][]byte {
	t.Helper()
	files, err := schema.TrainerCRDFiles()
	if err != nil {
		t.Fatal(err)
	}
	return append(files, []byte(jobsetCRD))
}

// establishedCRDs decodes crdFiles for the fake apiextensions clientset, with
// the Established condition a real server would set.
func establishedCRDs(t testing.TB) []runtime.Object {
	t.Helper()
	var out []runtime.Object
	for _, f := range crdFiles(t) {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(f), 4096)
		for {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				break
			}
			if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
				continue
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal(raw, crd); err != nil {
				t.Fatal(err)
			}
			crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
			out = append(out, crd)
		}
	}
	if len(out) != 4 {
		t.Fatalf("%d CRDs, want the three trainer CRDs and JobSet's", len(out))
	}
	return out
}

func unstructuredOf(t testing.TB, obj any) runtime.Object {
	t.Helper()
	u, err := toUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// fakeCluster is a cluster made of client-go fakes only.
type fakeCluster struct {
	kube *kubefake.Clientset
	crds *apiextensionsfake.Clientset
	dyn  *dynamicfake.FakeDynamicClient
}

// newFakeCluster holds kube, crds and custom objects, and the recipes'
// GPU-NIC networks, Ready (gkeNetworks).
func newFakeCluster(t testing.TB, kube, crds, custom []runtime.Object) *fakeCluster {
	t.Helper()
	listKinds := map[k8sschema.GroupVersionResource]string{
		clusterTrainingRuntimes: "ClusterTrainingRuntimeList",
		trainingRuntimes:        "TrainingRuntimeList",
		trainJobs:               "TrainJobList",
		networkv1.SchemeGroupVersion.WithResource("networks"):            "NetworkList",
		networkv1.SchemeGroupVersion.WithResource("gkenetworkparamsets"): "GKENetworkParamSetList",
	}
	for _, u := range gkeNetworks(t) {
		custom = append(custom, u)
	}
	return &fakeCluster{
		kube: kubefake.NewClientset(kube...),
		crds: apiextensionsfake.NewClientset(crds...),
		dyn:  dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, custom...),
	}
}

func (f *fakeCluster) connect(kubeconfig, kubeContext string) (*Clients, error) {
	return &Clients{Kube: f.kube, CRDs: f.crds, Dynamic: f.dyn, Host: "https://fake.example"}, nil
}

// writes lists every action that is not a read.
func writes(actions []k8stesting.Action) []string {
	var out []string
	for _, a := range actions {
		switch a.GetVerb() {
		case "get", "list", "watch":
		default:
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

func (f *fakeCluster) writes() []string {
	return append(append(writes(f.kube.Actions()), writes(f.crds.Actions())...), writes(f.dyn.Actions())...)
}

// The command's exit statuses, which the tests assert through validate.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// validate runs the validator as `tcpxogen validate` does: args parsed with
// the flags AddFlags binds, the error reported on stderr and mapped to the
// command's exit status.
func validate(t testing.TB, connect ConnectFunc, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	fs := pflag.NewFlagSet("validate", pflag.ContinueOnError)
	fs.SetOutput(&e)
	var opts Options
	opts.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("test arguments %q: %v", args, err)
	}
	err := Run(context.Background(), opts, connect, &o, &e)
	var ie *InputError
	switch {
	case err == nil:
		return exitOK, o.String(), e.String()
	case errors.As(err, &ie):
		code = exitUsage
	default:
		code = exitFailure
	}
	fmt.Fprintf(&e, "tcpxogen validate: %v\n", err)
	return code, o.String(), e.String()
}

// dryRun is validate --dry-run of a recipe with a pinned image.
func dryRun(t testing.TB, connect ConnectFunc, recipeName string, extra ...string) (int, string, string) {
	t.Helper()
	args := append([]string{"--recipe", recipePath(recipeName), "--benchmark-image", pinnedImage, "--dry-run"}, extra...)
	return validate(t, connect, args...)
}

// noConnect fails the test if the command reaches for a cluster.
func noConnect(t testing.TB) ConnectFunc {
	return func(string, string) (*Clients, error) {
		t.Error("the command connected to a cluster before rejecting its input")
		return nil, fmt.Errorf("no cluster in this test")
	}
}

func contains(t testing.TB, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
