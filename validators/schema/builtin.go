package schema

import (
	"fmt"

	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	kjson "sigs.k8s.io/json"
)

const builtinUnchecked = "built-in kind: server-side semantic validation and defaulting (k8s.io/kubernetes) are not run; only unknown fields and value types are checked"

// validateBuiltin strictly decodes u into its k8s.io/api type, which is what the API server's
// strict decoder does before anything else; it reports false when gvk is not a built-in kind.
func validateBuiltin(gvk k8sschema.GroupVersionKind, u map[string]any, r *Report) bool {
	if gvk.Kind == "List" {
		// v1 List items are raw extensions: decoding would accept anything in them.
		r.Findings = append(r.Findings, Finding{Path: "kind", Kind: FindingUnknownKind,
			Detail: "a List's items are not validated; emit each item as its own YAML document"})
		return true
	}
	obj, err := clientgoscheme.Scheme.New(gvk)
	if err != nil {
		return false
	}
	r.Unchecked = append(r.Unchecked, builtinUnchecked)
	j, err := utiljson.Marshal(u)
	if err != nil {
		r.Findings = append(r.Findings, Finding{Kind: FindingInvalid, Detail: fmt.Sprintf("cannot encode the object as JSON: %v", err)})
		return true
	}
	strictErrs, err := kjson.UnmarshalStrict(j, obj)
	if err != nil {
		r.Findings = append(r.Findings, Finding{Kind: FindingInvalid,
			Detail: fmt.Sprintf("does not decode as %s, so the API server rejects it: %v", gvkString(gvk), err)})
		return true
	}
	for _, se := range strictErrs {
		f := Finding{Kind: FindingPruned, Detail: fmt.Sprintf(
			"unknown field: the %s type has no such field, so the API server drops it silently (fieldValidation=Strict rejects it); remove it or fix its name or placement", gvkString(gvk))}
		if fe, ok := se.(kjson.FieldError); ok {
			f.Path = fe.FieldPath()
		} else {
			f.Detail = se.Error()
		}
		r.Findings = append(r.Findings, f)
	}
	return true
}
