package harness

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RenderRBAC runs the CLI's `render rbac` with args and decodes the objects
// it prints.
func RenderRBAC(t testing.TB, cli string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	out, err := exec.Command(cli, append([]string{"render", "rbac"}, args...)...).Output()
	if err != nil {
		t.Fatalf("render rbac %v: %v", args, err)
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("render rbac %v printed what does not decode: %v", args, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// ApplyRBAC creates the objects with strict field validation (the API
// server must accept what render rbac prints) or replaces what a previous
// run left.
func (cp *ControlPlane) ApplyRBAC(t testing.TB, ctx context.Context, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		err := cp.Client.Create(ctx, o.DeepCopy(), client.FieldValidation(metav1.FieldValidationStrict))
		if apierrors.IsAlreadyExists(err) {
			cur := &unstructured.Unstructured{}
			cur.SetGroupVersionKind(o.GroupVersionKind())
			if err = cp.Client.Get(ctx, client.ObjectKeyFromObject(o), cur); err == nil {
				upd := o.DeepCopy()
				upd.SetResourceVersion(cur.GetResourceVersion())
				err = cp.Client.Update(ctx, upd)
			}
		}
		if err != nil {
			t.Fatalf("applying %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}
