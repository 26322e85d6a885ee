//go:build apiserver

package schema

import (
	"regexp"

	"context"
	"errors"
	"fmt"
	"reflect"
	sigsyaml "sigs.k8s.io/yaml"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// TestAPIServerAgreesWithValidator sends every validation case to a real API server as a
// Strict, dry-run create and checks that the server's verdict is the in-process one: fields we
// report as pruned are the ones Strict rejects, invalid findings are the server's field errors
// path for path, and what the server would store is the submitted object plus exactly the
// defaults in Report.Defaulted.
func TestAPIServerAgreesWithValidator(t *testing.T) {
	start := time.Now()
	dyn, cfg := StartAPIServer(t)
	t.Logf("API server up in %v", time.Since(start))

	files, err := TrainerCRDFiles()
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	crds := InstallCRDs(t, cfg, files...)
	t.Logf("%d CRDs established in %v", len(crds), time.Since(start))
	resources := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range crds {
		resources[crd.Spec.Names.Kind] = crd
	}

	v := mustTrainer(t)
	for _, c := range validationCases {
		if c.server == serverSkip {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			obj := caseObject(t, c)
			r, err := v.ValidateObject(obj)
			if err != nil {
				t.Fatal(err)
			}
			crd := resources[obj.GetKind()]
			if crd == nil {
				t.Fatalf("no CRD installed for kind %q", obj.GetKind())
			}
			start := time.Now()
			stored, err := dryRunCreate(dyn, crd, obj)
			t.Logf("server answered in %v", time.Since(start))

			switch c.server {
			case serverRejects:
				if err == nil {
					t.Fatalf("server accepted what the validator rejects with %v", r.Findings)
				}
				checkServerRejection(t, err, r.Findings)
			case serverAccepts:
				if err != nil {
					t.Fatalf("server rejected what the validator accepts (findings %v): %v", r.Findings, err)
				}
				checkStored(t, stored, r.Defaulted)
			}
		})
	}
}

func dryRunCreate(dyn dynamic.Interface, crd *apiextensionsv1.CustomResourceDefinition, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: obj.GroupVersionKind().Version, Resource: crd.Spec.Names.Plural}
	opts := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict, DryRun: []string{metav1.DryRunAll}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if crd.Spec.Scope == apiextensionsv1.ClusterScoped {
		return dyn.Resource(gvr).Create(ctx, obj, opts)
	}
	ns := obj.GetNamespace()
	if ns == "" {
		ns = "default" // what the validator assumes, and what kubectl would send
	}
	return dyn.Resource(gvr).Namespace(ns).Create(ctx, obj, opts)
}

// checkServerRejection checks that the server rejected the object for the reasons the validator
// found. A Strict decoding failure stops the request before validation, so pruned findings are
// checked first and alone, as the server reports them.
func checkServerRejection(t *testing.T, err error, findings []Finding) {
	t.Helper()
	var pruned, invalid []string
	for _, f := range findings {
		switch f.Kind {
		case FindingPruned:
			pruned = append(pruned, f.Path)
		case FindingInvalid:
			invalid = append(invalid, f.Path)
		}
	}
	if len(pruned) > 0 {
		if !apierrors.IsBadRequest(err) {
			t.Fatalf("want a 400 strict decoding error for %q, got %v", pruned, err)
		}
		for _, p := range pruned {
			if want := fmt.Sprintf("unknown field %q", p); !strings.Contains(err.Error(), want) {
				t.Errorf("server error does not contain %s: %v", want, err)
			}
		}
		if got := strings.Count(err.Error(), "unknown field "); got != len(pruned) {
			t.Errorf("server reports %d unknown fields, validator %d (%q): %v", got, len(pruned), pruned, err)
		}
		return
	}
	if slices.Equal(invalid, []string{"metadata"}) {
		// Undecodable metadata fails the request body's decoding: a 400, no field causes.
		if !apierrors.IsBadRequest(err) {
			t.Errorf("want a 400 decoding error for undecodable metadata, got %v", err)
		}
		return
	}
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		t.Fatalf("want a 422 Invalid error with causes for %q, got %v", invalid, err)
	}
	var causes []string
	for _, c := range status.Status().Details.Causes {
		f := c.Field
		if f == "<nil>" {
			f = ""
		}
		causes = append(causes, f)
	}
	slices.Sort(causes)
	slices.Sort(invalid)
	if !slices.Equal(causes, invalid) {
		t.Errorf("field errors: server %q, validator %q\nserver: %v\nvalidator: %v", causes, invalid, err, findings)
	}
}

// checkStored compares what the server would store with Report.Defaulted: every top-level field
// the server keeps, spec in full, and the metadata fields a manifest sets.
func checkStored(t *testing.T, stored, defaulted *unstructured.Unstructured) {
	t.Helper()
	if defaulted == nil {
		t.Fatal("validator produced no Defaulted object")
	}
	for _, key := range []string{"apiVersion", "kind", "spec", "status"} {
		got, gotOK := stored.Object[key]
		want, wantOK := defaulted.Object[key]
		if gotOK != wantOK || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: server stores %#v (present %v), validator's Defaulted has %#v (present %v)", key, got, gotOK, want, wantOK)
		}
	}
	var extra []string
	for key := range stored.Object {
		if !slices.Contains([]string{"apiVersion", "kind", "metadata", "spec", "status"}, key) {
			extra = append(extra, key)
		}
	}
	if len(extra) > 0 {
		t.Errorf("server stores top-level fields the comparison does not cover: %q", extra)
	}
	if stored.GetName() != defaulted.GetName() ||
		!reflect.DeepEqual(stored.GetLabels(), defaulted.GetLabels()) ||
		!reflect.DeepEqual(stored.GetAnnotations(), defaulted.GetAnnotations()) {
		t.Errorf("metadata: server %s %v %v, Defaulted %s %v %v", stored.GetName(), stored.GetLabels(), stored.GetAnnotations(),
			defaulted.GetName(), defaulted.GetLabels(), defaulted.GetAnnotations())
	}
	// A namespaced object sent without one lands in the request's namespace; otherwise the
	// namespace is the validator's, including the one it clears on cluster-scoped objects.
	if ns := defaulted.GetNamespace(); stored.GetNamespace() != ns && !(ns == "" && stored.GetNamespace() == "default") {
		t.Errorf("namespace: server %q, Defaulted %q", stored.GetNamespace(), ns)
	}
}

// TestAPIServerAcceptsShippedManifests POSTs every shipped custom resource
// with fieldValidation=Strict and compares what the server would store with
// what was sent plus the in-process defaults.
func TestAPIServerAcceptsShippedManifests(t *testing.T) {
	dyn, cfg := StartAPIServer(t)
	files, err := TrainerCRDFiles()
	if err != nil {
		t.Fatal(err)
	}
	resources := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range InstallCRDs(t, cfg, files...) {
		resources[crd.Spec.Names.Kind] = crd
	}
	v := mustTrainer(t)
	posted := 0
	for rel, data := range shippedManifests(t) {
		reports, err := v.Validate(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reports {
			crd := resources[r.Kind]
			if crd == nil {
				continue // built-in kinds: the apiextensions server does not serve them
			}
			obj := documentObject(t, data, r.Document)
			stored, err := dryRunCreate(dyn, crd, obj)
			if err != nil {
				t.Fatalf("%s %s/%s rejected by the API server: %v", rel, r.Kind, r.Name, err)
			}
			checkStored(t, stored, r.Defaulted)
			posted++
		}
	}
	if posted == 0 {
		t.Fatal("no shipped custom resource was posted")
	}
}

// documentObject decodes the n-th (1-based, counting comment-only
// documents as the validator does) YAML document of data, as sent.
func documentObject(t *testing.T, data []byte, n int) *unstructured.Unstructured {
	t.Helper()
	docs := regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1)
	if n < 1 || n > len(docs) {
		t.Fatalf("document %d of %d", n, len(docs))
	}
	js, err := sigsyaml.YAMLToJSON([]byte(docs[n-1]))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatalf("document %d: %v", n, err)
	}
	return u
}
