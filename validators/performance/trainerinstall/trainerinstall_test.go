package trainerinstall

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/tcpxogen/tcpxogen/bom"
)

func TestRenderPinnedInstall(t *testing.T) {
	src, err := LinkedSources()
	if err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := bom.FindRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bom.Load(filepath.Join(root, bom.RepoPath))
	if err != nil {
		t.Fatal(err)
	}
	img := Images{Trainer: b.Trainer.ControllerImage, JobSetTag: b.JobSet.ControllerVersion}
	out, err := Render(src, img)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	kinds := map[string]int{}
	var images []string
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			break
		}
		u := &unstructured.Unstructured{Object: m}
		kinds[u.GetKind()]++
		if u.GetKind() == "Deployment" {
			var d appsv1.Deployment
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &d); err != nil {
				t.Fatal(err)
			}
			for _, c := range d.Spec.Template.Spec.Containers {
				images = append(images, c.Image)
			}
		}
		if u.GetKind() == "Namespace" && u.GetName() == "jobset-system" {
			t.Error("the JobSet namespace survived the trainer's patch that deletes it")
		}
	}
	if kinds["CustomResourceDefinition"] != 4 {
		t.Errorf("%d CRDs, want 4 (three trainer, one JobSet): %v", kinds["CustomResourceDefinition"], kinds)
	}
	if kinds["Deployment"] != 2 {
		t.Errorf("%d Deployments, want 2: %v", kinds["Deployment"], kinds)
	}
	want := []string{b.Trainer.ControllerImage, "registry.k8s.io/jobset/jobset:" + b.JobSet.ControllerVersion}
	for _, w := range want {
		found := false
		for _, i := range images {
			found = found || i == w
		}
		if !found {
			t.Errorf("no Deployment runs %s; images: %s", w, strings.Join(images, ", "))
		}
	}
	t.Logf("%d objects: %v", len(bytes.Split(out, []byte("\n---\n"))), kinds)
}
