//go:build apiserver

// These tests run `validate --dry-run` in-process against a real
// apiextensions-apiserver (in-process, on an embedded etcd) holding the
// pinned trainer CRDs and a deployed torch-distributed-tcpxo, once for each
// row of the recipe-driven validation policy (docs/design.md). The server serves
// custom resources only, so Nodes, Namespaces and the controller Deployments
// come from client-go's fake clientset, composed with the server the way
// lifecycle.KubeCluster composes its two clients.
//
//	go test -tags apiserver ./validators/performance/validate/
//
// Not with -trimpath: the server fixtures find their certificates through
// runtime.Caller.
package validate

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/validators/schema"
)

// writeRecorder records every request that is not a read, so a test can
// prove that a dry run sent none.
type writeRecorder struct {
	mu     sync.Mutex
	writes []string
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (w *writeRecorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.mu.Lock()
			w.writes = append(w.writes, r.Method+" "+r.URL.Path)
			w.mu.Unlock()
		}
		return rt.RoundTrip(r)
	})
}

// serverCluster is the API server for custom resources plus a fake
// clientset for core and apps objects.
type serverCluster struct {
	cfg  *rest.Config
	dyn  dynamic.Interface
	kube *kubefake.Clientset
	rec  *writeRecorder
}

// trainerState is how much of the trainer a row puts on the cluster.
type trainerState int

const (
	missing  trainerState = iota // nothing
	partial                      // the CRDs, no controllers: what an interrupted uninstall leaves
	complete                     // the CRDs and both controllers, available
)

func (s trainerState) String() string { return [...]string{"missing", "partial", "complete"}[s] }

// newServerCluster starts the server and puts the trainer in state on it;
// with the CRDs present it also deploys the shipped runtime rendered from the
// recipe (changed by change, when given), as a user following the docs does.
func newServerCluster(t *testing.T, recipeName string, state trainerState, change func(*trainer.ClusterTrainingRuntime)) *serverCluster {
	t.Helper()
	dyn, cfg := schema.StartAPIServer(t)
	kube := append(gpuNodes(t, recipeName, 2), namespace("default"))
	installGKENetworks(t, cfg, dyn)
	if state >= partial {
		schema.InstallCRDs(t, cfg, crdFiles(t)...)
		rt := shippedFor(t, recipeName)
		if change != nil {
			change(rt)
		}
		u, err := toUnstructured(rt)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(clusterTrainingRuntimes).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("deploying the shipped runtime: %v", err)
		}
	}
	if state == complete {
		kube = append(kube, controllers()...)
	}
	return &serverCluster{cfg: cfg, dyn: dyn, kube: kubefake.NewClientset(kube...), rec: &writeRecorder{}}
}

// connect hands the command clients whose requests to the server are
// recorded.
func (s *serverCluster) connect(t *testing.T) ConnectFunc {
	return func(string, string) (*Clients, error) {
		cfg := rest.CopyConfig(s.cfg)
		cfg.Wrap(s.rec.wrap)
		crds, err := apiextensionsclient.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		return &Clients{Kube: s.kube, CRDs: crds, Dynamic: dyn, Host: cfg.Host}, nil
	}
}

// snapshot lists what a run could have changed on the server: the CRDs and
// every trainer object, each with its resourceVersion.
func (s *serverCluster) snapshot(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	crds, err := apiextensionsclient.NewForConfigOrDie(s.cfg).ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range crds.Items {
		out = append(out, fmt.Sprintf("CustomResourceDefinition %s %s", c.Name, c.ResourceVersion))
	}
	// GKE's Networks always; the trainer's kinds where its CRDs are.
	gvrs := []k8sschema.GroupVersionResource{networkv1.SchemeGroupVersion.WithResource("networks"), networkv1.SchemeGroupVersion.WithResource("gkenetworkparamsets")}
	if slices.ContainsFunc(crds.Items, func(c apiextensionsv1.CustomResourceDefinition) bool { return c.Name == ctrCRD }) {
		gvrs = append(gvrs, clusterTrainingRuntimes, trainingRuntimes, trainJobs)
	}
	for _, gvr := range gvrs {
		list, err := s.dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("listing %s: %v", gvr.Resource, err)
		}
		for _, o := range list.Items {
			out = append(out, fmt.Sprintf("%s %s/%s %s", o.GetKind(), o.GetNamespace(), o.GetName(), o.GetResourceVersion()))
		}
	}
	slices.Sort(out)
	return out
}

// dryRunUnchanged runs validate --dry-run and checks that it changed
// nothing: no write request reached the server, no write action reached the
// fake clientset, and the server's objects are as they were.
func (s *serverCluster) dryRunUnchanged(t *testing.T, recipeName string, extra ...string) (int, string, string) {
	t.Helper()
	before := s.snapshot(t)
	code, stdout, stderr := dryRun(t, s.connect(t), recipeName, extra...)
	if len(s.rec.writes) > 0 {
		t.Errorf("the dry run sent write requests to the API server: %v", s.rec.writes)
	}
	if w := writes(s.kube.Actions()); len(w) > 0 {
		t.Errorf("the dry run wrote core objects: %v", w)
	}
	if after := s.snapshot(t); !slices.Equal(before, after) {
		t.Errorf("the dry run changed the server's objects:\nbefore %v\nafter  %v", before, after)
	}
	return code, stdout, stderr
}

// TestDryRunPolicyTableOnAPIServer runs every row of docs/design.md's policy
// table. The missing rows cannot have a deployed shipped runtime: without the
// trainer's CRDs the API server has nowhere to store one.
func TestDryRunPolicyTableOnAPIServer(t *testing.T) {
	render := "tcpxogen render runtime --interfaces eth1=gpu-nic-1,eth2=gpu-nic-2,eth3=gpu-nic-3,eth4=gpu-nic-4,eth5=gpu-nic-5,eth6=gpu-nic-6,eth7=gpu-nic-7,eth8=gpu-nic-8 | kubectl apply -f -"
	for _, row := range []struct {
		recipe string
		state  trainerState
		extra  []string
		code   int
		stdout []string
		stderr []string
	}{
		{
			recipe: declared, state: complete, code: exitOK,
			stdout: []string{
				"trainer lifecycle: use-declared\n",
				"which the validator never tears down",
				"  installs nothing and deletes nothing\n",
				"  observed: the trainer is complete\n",
				"shipped runtime: ClusterTrainingRuntime torch-distributed-tcpxo: ok\n",
				"  would create TrainingRuntime default/nccl-tests-tcpxo-",
				"  would create TrainJob default/nccl-tests-tcpxo-",
				"; nothing of the trainer\n",
				"  floor: nccl-all-reduce-bw >= 300 GB/s (recipe); passes at >= 270 GB/s (0.9 × declared)\n",
				"  runtimeSource: shipped\n",
				"dry run: nothing was created, changed or deleted\n",
			},
		},
		{
			recipe: declared, state: missing, code: exitFailure,
			stdout: []string{
				"trainer lifecycle: fail-declared-not-deployed\n",
				"  remedy: Deploy Kubeflow Trainer as the recipe declares it",
				"  observed: the trainer is missing\n",
				"    missing: the TrainJob CRD",
				"shipped runtime: ClusterTrainingRuntime torch-distributed-tcpxo: FAILED\n",
				"benchmark: not planned\n",
				"refused: 2 problem(s); nothing was or would be created, changed or deleted\n",
			},
			stderr: []string{
				"1. trainer lifecycle: fail-declared-not-deployed: The recipe declares Kubeflow Trainer but the cluster does not run all of it",
				"the validator never installs a declared component",
				"2. shipped runtime: ClusterTrainingRuntime torch-distributed-tcpxo is not deployed",
				render,
			},
		},
		{
			recipe: declared, state: partial, code: exitFailure,
			stdout: []string{
				"trainer lifecycle: fail-declared-not-deployed\n",
				"  observed: the trainer is partial\n",
				"    present: the ClusterTrainingRuntime CRD",
				"    missing: the Kubeflow Trainer controller",
				"shipped runtime: ClusterTrainingRuntime torch-distributed-tcpxo: ok\n",
				"benchmark: not planned\n  the trainer lifecycle policy refuses the run",
				"refused: 1 problem(s)",
			},
			stderr: []string{"1. trainer lifecycle: fail-declared-not-deployed", "Deploy Kubeflow Trainer as the recipe declares it"},
		},
		{
			recipe: undeclared, state: missing, code: exitOK, extra: []string{"--trainer-manifests", trainerManifests},
			stdout: []string{
				"trainer lifecycle: install-and-tear-down\n",
				"  would install 9 objects, in order (labelled tcpxogen.dev/install-id=",
				"    1. Namespace kubeflow-system\n",
				"    2. CustomResourceDefinition clustertrainingruntimes.trainer.kubeflow.org\n",
				"    8. Deployment kubeflow-system/kubeflow-trainer-controller-manager\n",
				"    9. ValidatingWebhookConfiguration validator.trainer.kubeflow.org\n",
				"  would then delete, in reverse order, exactly the objects it created",
				"  the pinned trainer v2.2.0, from " + trainerManifests + "\n",
				"  observed: the trainer is missing\n",
				"shipped runtime: ClusterTrainingRuntime torch-distributed-tcpxo: to be applied\n",
				"(eth1=gpu-nic-1,eth2=gpu-nic-2,eth3=gpu-nic-3,eth4=gpu-nic-4,eth5=gpu-nic-5,eth6=gpu-nic-6,eth7=gpu-nic-7,eth8=gpu-nic-8)",
				"  would create TrainingRuntime default/nccl-tests-tcpxo-",
				", ClusterTrainingRuntime torch-distributed-tcpxo, then the trainer objects it installed (above), in reverse order\n",
				"  runtimeSource: shipped, once the applied torch-distributed-tcpxo is read back and agrees with the render",
				"dry run: nothing was created, changed or deleted\n",
			},
		},
		{
			recipe: undeclared, state: complete, code: exitOK,
			stdout: []string{
				"trainer lifecycle: reuse-stray\n",
				"deliberately reuses that undeclared trainer and never tears it down",
				"  installs nothing and deletes nothing\n",
				"shipped runtime: ClusterTrainingRuntime torch-distributed-tcpxo: ok\n",
				"; nothing of the trainer\n",
				"  runtimeSource: shipped\n",
				"dry run: nothing was created, changed or deleted\n",
			},
		},
		{
			recipe: undeclared, state: partial, code: exitFailure, extra: []string{"--trainer-manifests", trainerManifests},
			stdout: []string{
				"trainer lifecycle: fail-partial\n",
				"  remedy: Complete the installation (and declare kubeflow-trainer in the recipe) or remove what is left of it",
				"  observed: the trainer is partial\n",
				"benchmark: not planned\n",
				"refused: 1 problem(s)",
			},
			stderr: []string{"1. trainer lifecycle: fail-partial: The recipe does not declare Kubeflow Trainer and the cluster has only part of one"},
		},
	} {
		declares := map[string]string{declared: "declared", undeclared: "undeclared"}[row.recipe]
		t.Run(declares+"/"+row.state.String(), func(t *testing.T) {
			s := newServerCluster(t, row.recipe, row.state, nil)
			code, stdout, stderr := s.dryRunUnchanged(t, row.recipe, row.extra...)
			if code != row.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, row.code, stdout, stderr)
			}
			contains(t, "plan", stdout, row.stdout...)
			contains(t, "stderr", stderr, row.stderr...)
			if row.code != exitOK && strings.Contains(stdout, "runtimeSource: shipped") {
				t.Error("a refused run still claims runtimeSource shipped")
			}
			if row.code == exitOK && stderr != "" {
				t.Errorf("a sound plan printed to stderr:\n%s", stderr)
			}
		})
	}
}

// On a real server the deployed runtime carries everything the server adds
// (uid, resourceVersion, managedFields, CRD defaults); the agreement check
// ignores all of it, and still finds the one network name that differs.
func TestDryRunAgreementOnAPIServer(t *testing.T) {
	s := newServerCluster(t, declared, complete, func(rt *trainer.ClusterTrainingRuntime) {
		pod := &rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template
		pod.Annotations[runtimes.AnnotationInterfaces] = strings.Replace(pod.Annotations[runtimes.AnnotationInterfaces], `"gpu-nic-5"`, `"gpu-nic-5b"`, 1)
	})
	code, stdout, stderr := s.dryRunUnchanged(t, declared)
	if code != exitFailure {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	diff := `spec.template.spec.replicatedJobs[name=node].template.spec.template.metadata.annotations["networking.gke.io/interfaces"](JSON)[5].network: deployed "gpu-nic-5b" vs rendered "gpu-nic-5"`
	contains(t, "plan", stdout, "differs from what the recipe's mapping renders in 1 place(s):\n    "+diff+"\n")
	contains(t, "stderr", stderr, "does not agree with what the recipe's mapping renders", diff, "| kubectl replace -f -")
}

// installGKENetworks serves GKE's multi-network kinds from the CRDs
// gke-networking-api publishes (config/crds, the module go.mod pins) and
// holds the recipes' GPU-NIC networks, Ready (gkeNetworks), as a
// provisioned A3 Mega cluster does: validate's preflight reads them as
// check cluster does.
func installGKENetworks(t *testing.T, cfg *rest.Config, dyn dynamic.Interface) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/GoogleCloudPlatform/gke-networking-api").Output()
	if err != nil {
		t.Fatalf("locating gke-networking-api's CRDs: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "crds")
	var files [][]byte
	for _, f := range []string{"networking.gke.io_networks.yaml", "networking.gke.io_gkenetworkparamsets.yaml"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, data)
	}
	schema.InstallCRDs(t, cfg, files...)
	ctx := context.Background()
	for _, u := range gkeNetworks(t) {
		gvr := networkv1.SchemeGroupVersion.WithResource(strings.ToLower(u.GetKind()) + "s")
		created, err := dyn.Resource(gvr).Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		// Status is a subresource: set Ready as GKE's controllers do.
		created.Object["status"] = u.Object["status"]
		if _, err := dyn.Resource(gvr).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("marking %s %s Ready: %v", u.GetKind(), u.GetName(), err)
		}
	}
}
