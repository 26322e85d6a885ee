package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/tcpxogen/tcpxogen/internal/access"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/names"
)

// apiServer answers the reads check cluster makes, as JSON: the shipped
// runtime deployed, a TrainJob of it and one of the benchmark, nothing else
// (404). It records each request's method and path.
type apiServer struct {
	t    *testing.T
	mu   sync.Mutex
	seen []string
	// objects are the JSON answers by path; any other path is a 404.
	objects map[string]any
}

func (s *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen = append(s.seen, r.Method+" "+r.URL.Path)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	o, ok := s.objects[r.URL.Path]
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound})
		return
	}
	json.NewEncoder(w).Encode(o)
}

func guardedClients(t *testing.T, srv *apiServer, list access.List) *Clients {
	t.Helper()
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	b, err := list.Bind("")
	if err != nil {
		t.Fatal(err)
	}
	g := access.NewGuard(b)
	cfg := &rest.Config{Host: ts.URL}
	g.Wrap(cfg)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &Clients{Kube: kube, Dynamic: dyn, Guard: g, Host: ts.URL}
}

// Check cluster's reads are the ones access.CheckCluster declares (the
// guard refuses any other before it is sent), and it makes each of the
// TrainJob check's: the TrainJobs of every namespace, each one's snapshot
// ConfigMap by name, the benchmark runtime where a TrainJob runs it.
// Validate runs RunCheck under its own list, which grants none of those:
// RunCheck must not make them.
func TestReadsAreDeclared(t *testing.T) {
	rt := shippedRuntime(t)
	rt.APIVersion, rt.Kind = trainer.GroupVersion.String(), trainer.ClusterTrainingRuntimeKind
	job := func(ns, name string, ref trainer.RuntimeRef) trainer.TrainJob {
		return trainer.TrainJob{TypeMeta: metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}, Spec: trainer.TrainJobSpec{RuntimeRef: ref}}
	}
	objects := map[string]any{
		// One A3 Mega node: a pool to judge, so every read is made (the
		// DRANET reads too).
		"/api/v1/nodes": map[string]any{"kind": "NodeList", "apiVersion": "v1", "items": labelled(pool(t, 1, a3Mega(vpcs(8))), "a3-megagpu-8g", "")},
		"/api/v1/namespaces/" + names.ComponentsNamespace + "/pods":                    map[string]any{"kind": "PodList", "apiVersion": "v1", "items": []any{}},
		"/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/" + names.Runtime: rt,
		// Managed DRANET's DeviceClass naming a (made-up) driver: its
		// ResourceSlices are read too.
		"/apis/resource.k8s.io/v1/deviceclasses/" + DRANETDeviceClass: dranetClass(`device.driver == "mrdma.example.com"`),
		"/apis/resource.k8s.io/v1/resourceslices":                     map[string]any{"kind": "ResourceSliceList", "apiVersion": "resource.k8s.io/v1", "items": []any{}},
		"/apis/trainer.kubeflow.org/v1alpha1/trainjobs": map[string]any{"kind": "TrainJobList", "apiVersion": trainer.GroupVersion.String(), "metadata": map[string]any{}, "items": []trainer.TrainJob{
			job("team-a", "train", trainer.RuntimeRef{Name: names.Runtime}),
			job("bench", "nccl", trainer.RuntimeRef{Name: names.Benchmark, Kind: ptr.To(trainer.TrainingRuntimeKind)}),
		}},
	}
	srv := &apiServer{t: t, objects: objects}
	fs, err := RunCheckCluster(context.Background(), guardedClients(t, srv, access.CheckCluster), fabric.TCPXO, DefaultNodeSelector, names.ComponentsNamespace, expect(t))
	if err != nil {
		t.Fatalf("check cluster under its declared list: %v", err)
	}
	for _, want := range []string{
		"GET /apis/trainer.kubeflow.org/v1alpha1/trainjobs",
		"GET /api/v1/namespaces/team-a/configmaps/train-runtime-snapshot",
		"GET /api/v1/namespaces/bench/configmaps/nccl-runtime-snapshot",
		"GET /apis/trainer.kubeflow.org/v1alpha1/namespaces/bench/trainingruntimes/" + names.Benchmark,
		"GET /apis/resource.k8s.io/v1/deviceclasses/" + DRANETDeviceClass,
		"GET /apis/resource.k8s.io/v1/resourceslices",
	} {
		if !slices.Contains(srv.seen, want) {
			t.Errorf("check cluster did not read %s; it read:\n%s", want, strings.Join(srv.seen, "\n"))
		}
	}
	has(t, fs, Warn, "trainjob-wiring", "2 TrainJob(s)", "team-a/train", "bench/nccl", "no runtime snapshot")

	srv = &apiServer{t: t, objects: objects}
	if _, _, err := RunCheck(context.Background(), guardedClients(t, srv, access.Validate), fabric.TCPXO, DefaultNodeSelector, names.ComponentsNamespace, expect(t)); err != nil {
		t.Fatalf("validate's cluster check under validate's list: %v", err)
	}
	if !slices.Contains(srv.seen, "GET /apis/resource.k8s.io/v1/resourceslices") {
		t.Errorf("validate's cluster check did not look for DRANET's devices; it read:\n%s", strings.Join(srv.seen, "\n"))
	}
	for _, s := range srv.seen {
		if strings.Contains(s, "trainjobs") || strings.Contains(s, "configmaps") {
			t.Errorf("validate's cluster check read %s, which validate's list does not grant", s)
		}
	}
	srv = &apiServer{t: t, objects: objects}
	if _, err := RunCheckCluster(context.Background(), guardedClients(t, srv, access.Validate), fabric.TCPXO, DefaultNodeSelector, names.ComponentsNamespace, expect(t)); !errors.Is(err, access.ErrUndeclared) {
		t.Errorf("the TrainJob reads under validate's list: %v, want them refused as undeclared", err)
	}
}
