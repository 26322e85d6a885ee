package schema

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/internal/excerpt"
)

// Finding kinds. A finding of any kind makes a report not OK.
const (
	// FindingPruned is a field the API server drops without an error on a plain create or
	// apply. Unknown fields are exactly what fieldValidation=Strict rejects; the two other
	// silent drops (status under a status subresource, namespace on a cluster-scoped object)
	// pass even Strict.
	FindingPruned = "pruned"
	// FindingInvalid is a field the API server rejects.
	FindingInvalid = "invalid"
	// FindingWebhook is an error or warning from the trainer's own admission webhook.
	FindingWebhook = "webhook"
	// FindingUnknownKind is an object this validator has no schema for.
	FindingUnknownKind = "unknown-kind"
)

// Finding is one problem with one object.
type Finding struct {
	// Path is the field path in the API server's notation, for example
	// "spec.template.spec.replicatedJobs[0].replicas"; empty for the object as a whole.
	Path string
	// Kind is one of the Finding* constants.
	Kind string
	// Detail says what is wrong, in the API server's words where it has any.
	Detail string
}

func (f Finding) String() string {
	if f.Path == "" {
		return fmt.Sprintf("%s: %s", f.Kind, f.Detail)
	}
	return fmt.Sprintf("%s %s: %s", f.Kind, f.Path, f.Detail)
}

// Report is the result for one object.
type Report struct {
	// Document is the 1-based position of the object's YAML document in the input of
	// Validate; 0 for ValidateObject.
	Document int
	// APIVersion, Kind, Namespace and Name identify the object as submitted.
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	// Findings are in the order the checks ran: pruning (sorted by path), then validation,
	// then the webhook.
	Findings []Finding
	// Unchecked names each check that was deliberately not run for this object and why. It
	// does not affect OK: it is what a passing report does not prove.
	Unchecked []string
	// Defaulted is the object as the API server would store it: pruned, with CRD defaults
	// applied. Nil when there is no schema for the object or its metadata cannot be decoded.
	Defaulted *unstructured.Unstructured
}

// OK reports whether the object passed every check without a single finding.
func (r Report) OK() bool { return len(r.Findings) == 0 }

// Err returns nil when the report is OK, and otherwise an error that names the object and
// lists every finding.
func (r Report) Err() error {
	if r.OK() {
		return nil
	}
	var b strings.Builder
	b.WriteString(r.describe())
	fmt.Fprintf(&b, " fails schema validation with %d finding(s):", len(r.Findings))
	for _, f := range r.Findings {
		b.WriteString("\n  ")
		b.WriteString(f.String())
	}
	return errors.New(b.String())
}

func (r Report) describe() string {
	var b strings.Builder
	kind := r.Kind
	if kind == "" {
		kind = "object"
	}
	b.WriteString(kind)
	switch {
	case r.Namespace != "" && r.Name != "":
		fmt.Fprintf(&b, " %s/%s", r.Namespace, r.Name)
	case r.Name != "":
		fmt.Fprintf(&b, " %s", excerpt.Quote(r.Name))
	}
	if r.Document > 0 {
		fmt.Fprintf(&b, " (document %d)", r.Document)
	}
	return b.String()
}

// Validator validates manifests against one set of CRDs plus the built-in kinds. It is safe
// for concurrent use once constructed.
type Validator struct {
	// kinds maps each group/kind of the loaded CRDs to its served versions.
	kinds map[k8sschema.GroupKind]*crdKind
}

type crdKind struct {
	crdName  string
	versions map[string]*crdVersion
}

// crdVersion holds everything the API server derives once per CRD version when it starts
// serving it; building it is the expensive part, validating an object is cheap.
type crdVersion struct {
	gvk               k8sschema.GroupVersionKind
	namespaced        bool
	statusSubresource bool
	structural        *structuralschema.Structural
	schemaValidator   apiservervalidation.SchemaValidator
	// cel is nil when the schema has no x-kubernetes-validations.
	cel *cel.Validator
}

// New returns a Validator for the CRDs in crdFiles. Each file may hold several YAML documents;
// every non-empty document must be an apiextensions.k8s.io/v1 CustomResourceDefinition.
// With no files the Validator knows only the built-in kinds.
func New(crdFiles ...[]byte) (*Validator, error) {
	v := &Validator{kinds: map[k8sschema.GroupKind]*crdKind{}}
	for i, file := range crdFiles {
		docs, err := splitYAML(file)
		if err != nil {
			return nil, fmt.Errorf("CRD file %d: %w", i+1, err)
		}
		for _, d := range docs {
			if err := v.addCRD(d.json); err != nil {
				return nil, fmt.Errorf("CRD file %d, document %d: %w", i+1, d.number, err)
			}
		}
	}
	return v, nil
}

func (v *Validator) addCRD(doc []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return fmt.Errorf("decoding apiVersion and kind: %w", err)
	}
	if want := apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"); tm.GroupVersionKind() != want {
		return fmt.Errorf("document is %q %q, want a %s %s", tm.APIVersion, tm.Kind, want.GroupVersion(), want.Kind)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	// Strict, so that a CRD file with a misspelt field fails here instead of silently loading
	// a laxer schema than the cluster has.
	if err := yaml.UnmarshalStrict(doc, &crd); err != nil {
		return fmt.Errorf("decoding CustomResourceDefinition: %w", err)
	}
	if crd.Spec.Group == "" || crd.Spec.Names.Kind == "" {
		return fmt.Errorf("CRD %q has no spec.group or spec.names.kind", crd.Name)
	}
	if crd.Spec.PreserveUnknownFields {
		// Such a CRD prunes nothing; validating against it would prove nothing.
		return fmt.Errorf("CRD %q sets spec.preserveUnknownFields, which this validator does not support", crd.Name)
	}
	gk := k8sschema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
	if prev, ok := v.kinds[gk]; ok {
		return fmt.Errorf("CRD %q defines %s, already defined by CRD %q; load each CRD once", crd.Name, gk, prev.crdName)
	}
	kind := &crdKind{crdName: crd.Name, versions: map[string]*crdVersion{}}
	for _, ver := range crd.Spec.Versions {
		if !ver.Served {
			continue
		}
		cv, err := newCRDVersion(&crd, &ver)
		if err != nil {
			return fmt.Errorf("CRD %q version %s: %w", crd.Name, ver.Name, err)
		}
		kind.versions[ver.Name] = cv
	}
	if len(kind.versions) == 0 {
		return fmt.Errorf("CRD %q serves no version", crd.Name)
	}
	v.kinds[gk] = kind
	return nil
}

// newCRDVersion mirrors the API server's per-version setup in
// apiextensions-apiserver/pkg/apiserver/customresource_handler.go (getOrCreateServingInfoFor).
func newCRDVersion(crd *apiextensionsv1.CustomResourceDefinition, ver *apiextensionsv1.CustomResourceDefinitionVersion) (*crdVersion, error) {
	if ver.Schema == nil || ver.Schema.OpenAPIV3Schema == nil {
		return nil, errors.New("no openAPIV3Schema; apiextensions.k8s.io/v1 requires one")
	}
	internal := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(ver.Schema, internal, nil); err != nil {
		return nil, fmt.Errorf("converting schema to the internal version: %w", err)
	}
	ss, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("schema is not structural: %w", err)
	}
	if errs := structuralschema.ValidateStructural(nil, ss); len(errs) > 0 {
		return nil, fmt.Errorf("schema is not structural: %w", errs.ToAggregate())
	}
	// The server prunes unknown fields out of the defaults themselves before using them, and
	// does so on a copy because the structural schema shares default values with its input.
	ss = ss.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(ss); err != nil {
		return nil, fmt.Errorf("pruning defaults: %w", err)
	}
	sv, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("building the OpenAPI schema validator: %w", err)
	}
	return &crdVersion{
		gvk:               k8sschema.GroupVersionKind{Group: crd.Spec.Group, Version: ver.Name, Kind: crd.Spec.Names.Kind},
		namespaced:        crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		statusSubresource: ver.Subresources != nil && ver.Subresources.Status != nil,
		structural:        ss,
		schemaValidator:   sv,
		cel:               cel.NewValidator(ss, true, celconfig.PerCallLimit),
	}, nil
}

type yamlDoc struct {
	number int
	json   []byte
}

// splitYAML splits a multi-document YAML stream and converts each non-empty document to JSON.
// Document numbers count every document the stream separates, empty ones included, so they
// match what a reader counts in the file.
func splitYAML(in []byte) ([]yamlDoc, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(in)))
	var docs []yamlDoc
	for n := 1; ; n++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading YAML document %d: %w", n, err)
		}
		// Strict so that a duplicated key, whose first value the API server would never see,
		// is an error rather than a quiet overwrite.
		j, err := yaml.YAMLToJSONStrict(raw)
		if err != nil {
			return nil, fmt.Errorf("YAML document %d: %w", n, err)
		}
		if t := bytes.TrimSpace(j); len(t) == 0 || bytes.Equal(t, []byte("null")) {
			continue
		}
		docs = append(docs, yamlDoc{number: n, json: j})
	}
}

// Validate validates every object in a multi-document YAML manifest and returns one Report per
// object, in input order. It returns an error only when the input cannot be read as YAML
// objects; every problem with an object itself is a finding.
func (v *Validator) Validate(manifest []byte) ([]Report, error) {
	docs, err := splitYAML(manifest)
	if err != nil {
		return nil, err
	}
	reports := make([]Report, 0, len(docs))
	for _, d := range docs {
		// utiljson keeps integers as int64, as the API server's decoder does; a float64 would
		// fail integer-typed CEL rules and the typed conversion for the webhooks.
		var content map[string]any
		if err := utiljson.Unmarshal(d.json, &content); err != nil {
			return nil, fmt.Errorf("YAML document %d is not a Kubernetes object (a mapping): %w", d.number, err)
		}
		// The freshly decoded object is ours to mutate: no defensive copy.
		r := v.validate(content)
		r.Document = d.number
		reports = append(reports, r)
	}
	return reports, nil
}

// ValidateObject validates one object. obj is not modified. The error is reserved for a nil
// object or one that cannot be serialized to JSON; every problem with the object itself is a
// finding.
func (v *Validator) ValidateObject(obj *unstructured.Unstructured) (Report, error) {
	if obj == nil || obj.Object == nil {
		return Report{}, errors.New("nil object")
	}
	// A JSON round trip rather than a deep copy: the API server only ever sees the JSON, and
	// this turns Go ints and integral float64s into the int64s it would decode, where
	// runtime.DeepCopyJSON would panic on an int.
	j, err := utiljson.Marshal(obj.Object)
	if err != nil {
		return Report{}, fmt.Errorf("object cannot be serialized as JSON: %w", err)
	}
	var u map[string]any
	if err := utiljson.Unmarshal(j, &u); err != nil {
		return Report{}, fmt.Errorf("object does not survive a JSON round trip: %w", err)
	}
	return v.validate(u), nil
}

// validate validates u, which it owns and may mutate.
func (v *Validator) validate(u map[string]any) Report {
	r := Report{
		APIVersion: stringField(u, "apiVersion"),
		Kind:       stringField(u, "kind"),
	}
	if md, ok := u["metadata"].(map[string]any); ok {
		r.Namespace = stringField(md, "namespace")
		r.Name = stringField(md, "name")
	}
	if r.APIVersion == "" || r.Kind == "" {
		r.Findings = append(r.Findings, Finding{Kind: FindingUnknownKind,
			Detail: "apiVersion and kind must both be set (non-empty strings); without them no API server can route the object"})
		return r
	}
	gv, err := k8sschema.ParseGroupVersion(r.APIVersion)
	if err != nil {
		r.Findings = append(r.Findings, Finding{Path: "apiVersion", Kind: FindingUnknownKind,
			Detail: fmt.Sprintf("cannot parse apiVersion %s: want GROUP/VERSION, or v1 for the core group", excerpt.Quote(r.APIVersion))})
		return r
	}
	gvk := gv.WithKind(r.Kind)
	if kind, ok := v.kinds[gvk.GroupKind()]; ok {
		cv, ok := kind.versions[gvk.Version]
		if !ok {
			r.Findings = append(r.Findings, Finding{Path: "apiVersion", Kind: FindingUnknownKind,
				Detail: fmt.Sprintf("CRD %s does not serve version %s; use one of %s", kind.crdName, excerpt.Quote(gvk.Version), strings.Join(slices.Sorted(maps.Keys(kind.versions)), ", "))})
			return r
		}
		v.validateCustomResource(cv, u, &r)
		return r
	}
	if validateBuiltin(gvk, u, &r) {
		return r
	}
	r.Findings = append(r.Findings, Finding{Path: "kind", Kind: FindingUnknownKind,
		Detail: fmt.Sprintf("no schema for %s: it is neither a built-in kind nor defined by a loaded CRD (loaded: %s); load its CRD or fix apiVersion/kind",
			gvkString(gvk), v.loadedKinds())})
	return r
}

func (v *Validator) loadedKinds() string {
	if len(v.kinds) == 0 {
		return "none"
	}
	names := make([]string, 0, len(v.kinds))
	for gk := range v.kinds {
		names = append(names, gk.String())
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// validateCustomResource runs the API server's create path on u, which it owns and mutates.
func (v *Validator) validateCustomResource(cv *crdVersion, u map[string]any, r *Report) {
	ss := cv.structural
	var pruned []string

	// Decoding, as unstructuredSchemaCoercer.apply does for a strict request: root metadata is
	// set aside (strictly decoded, which finds its unknown fields), the rest is pruned and
	// coerced, then metadata is put back in its canonical form.
	objectMeta, foundMeta, metaUnknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		r.Findings = append(r.Findings, Finding{Path: "metadata", Kind: FindingInvalid,
			Detail: fmt.Sprintf("metadata does not decode, so the API server rejects the request outright: %s", metadataProblem(err))})
		return
	}
	pruned = append(pruned, metaUnknown...)
	pruned = append(pruned, structuralpruning.PruneWithOptions(u, ss, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u, ss)
	coerceErr, coercePruned := schemaobjectmeta.CoerceWithOptions(nil, u, ss, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
	if coerceErr != nil {
		r.Findings = append(r.Findings, fieldErrorFinding(FindingInvalid, coerceErr))
		return
	}
	pruned = append(pruned, coercePruned...)
	if foundMeta {
		if err := schemaobjectmeta.SetObjectMeta(u, objectMeta); err != nil {
			r.Findings = append(r.Findings, Finding{Path: "metadata", Kind: FindingInvalid, Detail: fmt.Sprintf("re-encoding metadata: %v", err)})
			return
		}
	}
	slices.Sort(pruned)
	for _, p := range pruned {
		r.Findings = append(r.Findings, Finding{Path: p, Kind: FindingPruned, Detail: fmt.Sprintf(
			"unknown field: the %s schema has no such field, so the API server drops it silently (fieldValidation=Strict rejects it); remove it or fix its name or placement", gvkString(cv.gvk))})
	}

	structuraldefaulting.Default(u, ss)

	// Create preparation (rest.BeforeCreate, customResourceStrategy.PrepareForCreate).
	if _, ok := u["status"]; ok && cv.statusSubresource {
		delete(u, "status")
		r.Findings = append(r.Findings, Finding{Path: "status", Kind: FindingPruned,
			Detail: "status is owned by the status subresource; the API server drops it on create without an error; do not emit it"})
	}
	if !cv.namespaced && r.Namespace != "" {
		unstructured.RemoveNestedField(u, "metadata", "namespace")
		r.Findings = append(r.Findings, Finding{Path: "metadata.namespace", Kind: FindingPruned,
			Detail: fmt.Sprintf("%s is cluster-scoped; the API server clears metadata.namespace without an error; do not set it", cv.gvk.Kind)})
	}
	r.Defaulted = &unstructured.Unstructured{Object: u}
	if cv.gvk.Kind == "TrainJob" && cv.gvk.Group == trainerGroup {
		r.Unchecked = append(r.Unchecked, trainJobWebhookUnchecked)
	}

	view := admissionView(u, cv.namespaced)
	errs := v.validateSchema(cv, view)
	for _, e := range errs {
		r.Findings = append(r.Findings, fieldErrorFinding(FindingInvalid, e))
	}
	if len(errs) == 0 {
		r.Findings = append(r.Findings, runAdmission(cv.gvk, view)...)
	}
}

// admissionView returns u as the server's validation sees it: a namespaced object without a
// namespace gets the one kubectl would send, and a generateName is expanded. u's own metadata is
// left alone so that Defaulted stays what was submitted.
func admissionView(u map[string]any, namespaced bool) map[string]any {
	md, _ := u["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	generateName, _ := md["generateName"].(string)
	fillNamespace := namespaced && ns == ""
	fillName := name == "" && generateName != ""
	if !fillNamespace && !fillName {
		return u
	}
	view := maps.Clone(u)
	vmd := maps.Clone(md)
	if vmd == nil {
		vmd = map[string]any{}
	}
	if fillNamespace {
		vmd["namespace"] = "default"
	}
	if fillName {
		// The server appends five random characters; a fixed suffix keeps results repeatable.
		vmd["name"] = generateName + "xxxxx"
	}
	view["metadata"] = vmd
	return view
}

// validateSchema mirrors customResourceStrategy.Validate for a create.
func (v *Validator) validateSchema(cv *crdVersion, u map[string]any) field.ErrorList {
	obj := &unstructured.Unstructured{Object: u}
	var errs field.ErrorList
	errs = append(errs, apimachineryvalidation.ValidateObjectMetaAccessor(obj, cv.namespaced, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u, cv.schemaValidator)...)
	errs = append(errs, schemaobjectmeta.Validate(nil, u, cv.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, cv.structural, u)...)
	if cv.cel != nil {
		if blocking := blockingError(errs); blocking != nil {
			errs = append(errs, blocking)
		} else {
			celErrs, _ := cv.cel.Validate(context.Background(), nil, cv.structural, u, nil, celconfig.RuntimeCELCostBudget)
			errs = append(errs, celErrs...)
		}
	}
	return errs
}

// blockingError mirrors hasBlockingErr in the apiextensions strategy: CEL rules assume a
// well-typed object, so the server does not run them when one of these errors exists.
func blockingError(errs field.ErrorList) *field.Error {
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return nil
}

func fieldErrorFinding(kind string, e *field.Error) Finding {
	path := e.Field
	if path == "<nil>" {
		path = ""
	}
	return Finding{Path: path, Kind: kind, Detail: fieldErrorDetail(e)}
}

// fieldErrorDetail renders a field error like the API server does, except that a composite bad
// value (a whole container list, say) is left out: the path already locates it and its JSON
// would drown the message.
func fieldErrorDetail(e *field.Error) string {
	switch e.BadValue.(type) {
	case nil, string, bool, int, int32, int64, float32, float64:
		body := e.ErrorBody()
		if e.BadValue == nil && e.Type == field.ErrorTypeInvalid {
			// field.Invalid(nil, nil, ...) renders as "Invalid value: null: ..."; drop the noise.
			body = strings.TrimPrefix(body, e.Type.String()+": null: ")
		}
		return body
	}
	if e.Detail == "" {
		return e.Type.String()
	}
	return e.Type.String() + ": " + e.Detail
}

func gvkString(gvk k8sschema.GroupVersionKind) string {
	return gvk.GroupVersion().String() + " " + gvk.Kind
}

func stringField(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// toTyped converts an unstructured object to a Go type the way a webhook server decodes the
// admission request: through JSON, so custom unmarshalers (quantities, int-or-string) apply.
func toTyped(u map[string]any, out any) error {
	j, err := utiljson.Marshal(u)
	if err != nil {
		return err
	}
	return utiljson.Unmarshal(j, out)
}

// goTypeError is the decoder's wording of a type mismatch, which names Go
// types and struct fields ("cannot unmarshal bool into Go struct field
// ObjectMeta.namespace of type string").
var goTypeError = regexp.MustCompile(`cannot unmarshal (\w+) into Go struct field \w+\.([\w.]+) of type (\S+)`)

// jsonKinds names the Go kinds of metadata fields in a YAML user's words.
var jsonKinds = map[string]string{"string": "a string", "bool": "true/false", "number": "a number", "object": "a mapping", "array": "a list",
	"int64": "an integer", "int32": "an integer", "map[string]string": "a mapping of strings"}

// metadataProblem says what is wrong with metadata in its field path and
// YAML terms rather than the decoder's Go identifiers.
func metadataProblem(err error) string {
	m := goTypeError.FindStringSubmatch(err.Error())
	if m == nil {
		return err.Error()
	}
	want, ok := jsonKinds[strings.TrimPrefix(m[3], "*")]
	if !ok {
		want = "another type"
	}
	got, ok := jsonKinds[m[1]]
	if !ok {
		got = m[1]
	}
	field := m[2]
	if field == "namespace" || field == "name" || field == "generateName" {
		// YAML 1.1 reads y, n, yes, no, on and off as booleans.
		return fmt.Sprintf("metadata.%s must be %s, not %s (quote the value)", field, want, got)
	}
	return fmt.Sprintf("metadata.%s must be %s, not %s", field, want, got)
}
