package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/e2e/harness"
	"github.com/tcpxogen/tcpxogen/validators/performance/trainerinstall"
)

// TestRenderedTrainerInstall applies the trainer install validate renders
// when it installs the trainer (trainerinstall, from the Go modules) to the
// real API server with strict field validation: every object must be one
// the server accepts. The objects other than Namespaces go in as a
// server-side dry run: this control plane already runs the trainer
// in-process, and the rendered webhook configurations would route
// admission to Services no pod serves. The CRDs are the ones the control
// plane runs on.
func TestRenderedTrainerInstall(t *testing.T) {
	ctx := context.Background()
	b, err := bom.Load(filepath.Join(repoRoot, bom.RepoPath))
	if err != nil {
		t.Fatal(err)
	}
	if b.Trainer.Version != harness.BuiltForTrainer {
		// validate installs the trainer the BOM pins; a control plane of
		// another trainer runs other CRDs, which this row compares with.
		t.Skipf("validate installs the BOM's trainer %s; this control plane runs trainer %s (its row runs in make e2e)", b.Trainer.Version, harness.BuiltForTrainer)
	}
	src, err := trainerinstall.LinkedSources()
	if err != nil {
		t.Fatal(err)
	}
	data, err := trainerinstall.Render(src, trainerinstall.Images{Trainer: b.Trainer.ControllerImage, JobSetTag: b.JobSet.ControllerVersion})
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	if len(objs) < 30 {
		t.Fatalf("the rendered install has %d objects; trainer v2.2.0's has 35", len(objs))
	}
	if os.Getenv("TCPXOGEN_E2E_DUMP_INSTALL") != "" {
		t.Logf("%s", data)
	}
	// Namespaces first, really: namespaced dry runs need them.
	for _, o := range objs {
		if o.GetKind() != "Namespace" {
			continue
		}
		if err := cp.Client.Create(ctx, o.DeepCopy(), strict); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("Namespace %s: %v", o.GetName(), err)
		}
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace":
		case "CustomResourceDefinition":
			var crd apiextensionsv1.CustomResourceDefinition
			if err := cp.Client.Get(ctx, client.ObjectKey{Name: o.GetName()}, &crd); err != nil {
				t.Errorf("rendered CRD %s is not the control plane's: %v", o.GetName(), err)
			}
		default:
			if err := cp.Client.Create(ctx, o.DeepCopy(), strict, client.DryRunAll); err != nil {
				t.Errorf("%s %s/%s rejected: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
			}
		}
	}
}
