package realize

import (
	"encoding/json"
	"fmt"
	"io/fs"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/tcpxogen/tcpxogen/validators/linkedtrainer"
)

// Rendering crddefaults/<version>.json, the projection defaults.go embeds
// and applies. It is production code, not a test helper, so that
// `go generate ./...` (through tools/compat) writes the file like every
// other generated artefact; the realize suite checks it (its -update
// rewrites it too).

// moduleCRDSchemas reads the full v1alpha1 schema of every CRD of the linked
// trainer version, as embedded byte for byte from its module (see package
// linkedtrainer).
func moduleCRDSchemas() (map[string]*apiextensionsv1.JSONSchemaProps, error) {
	files, err := linkedtrainer.CRDs()
	if err != nil {
		return nil, err
	}
	out := map[string]*apiextensionsv1.JSONSchemaProps{}
	for i, raw := range files {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
			return nil, fmt.Errorf("trainer %s CRD %d: %w", TrainerVersion(), i, err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Name == trainer.SchemeGroupVersion.Version && v.Schema != nil {
				out[crd.Spec.Names.Kind] = v.Schema.OpenAPIV3Schema
			}
		}
	}
	for _, kind := range []string{trainer.TrainJobKind, trainer.TrainingRuntimeKind, trainer.ClusterTrainingRuntimeKind} {
		if out[kind] == nil {
			return nil, fmt.Errorf("no %s %s schema among the trainer %s CRDs", kind, trainer.SchemeGroupVersion.Version, TrainerVersion())
		}
	}
	return out, nil
}

// projectForDefaults keeps what structural defaulting reads (see
// defaults.go): a node with a default whole (minus descriptions), and on the
// way to one only type, nullable, properties, items and
// additionalProperties. It returns nil for a subtree without defaults.
func projectForDefaults(s *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.JSONSchemaProps {
	if s == nil {
		return nil
	}
	if s.Default != nil {
		cp := s.DeepCopy()
		stripDescriptions(cp)
		return cp
	}
	out := &apiextensionsv1.JSONSchemaProps{Type: s.Type, Nullable: s.Nullable}
	keep := false
	for name, p := range s.Properties {
		if pp := projectForDefaults(&p); pp != nil {
			if out.Properties == nil {
				out.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
			}
			out.Properties[name] = *pp
			keep = true
		}
	}
	if s.Items != nil {
		if pi := projectForDefaults(s.Items.Schema); pi != nil {
			out.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: pi}
			keep = true
		}
	}
	if s.AdditionalProperties != nil {
		if pa := projectForDefaults(s.AdditionalProperties.Schema); pa != nil {
			out.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: pa}
			keep = true
		}
	}
	if !keep {
		return nil
	}
	return out
}

func stripDescriptions(s *apiextensionsv1.JSONSchemaProps) {
	if s == nil {
		return
	}
	s.Description = ""
	for k, p := range s.Properties {
		stripDescriptions(&p)
		s.Properties[k] = p
	}
	if s.Items != nil {
		stripDescriptions(s.Items.Schema)
		for i := range s.Items.JSONSchemas {
			stripDescriptions(&s.Items.JSONSchemas[i])
		}
	}
	if s.AdditionalProperties != nil {
		stripDescriptions(s.AdditionalProperties.Schema)
	}
}

// RenderCRDDefaults renders crddefaults/<version>.json for the linked
// trainer version: the projection of each of its CRDs' v1alpha1 schema,
// cut from the CRDs linkedtrainer embeds. The file it renders is the one
// the next build embeds and Realize defaults with; tools/compat writes it
// under go generate, and TestCRDDefaultsMatchModule holds the committed one
// to it.
func RenderCRDDefaults() ([]byte, error) {
	schemas, err := moduleCRDSchemas()
	if err != nil {
		return nil, err
	}
	file := crdDefaultsFile{
		Source:  TrainerModule + "@" + TrainerVersion() + "/manifests/base/crds",
		Version: trainer.SchemeGroupVersion.Version,
		Schemas: map[string]*apiextensionsv1.JSONSchemaProps{},
	}
	for kind, s := range schemas {
		file.Schemas[kind] = projectForDefaults(s)
	}
	raw, err := json.MarshalIndent(file, "", " ")
	if err != nil {
		return nil, fmt.Errorf("encoding the trainer %s CRD defaults: %w", TrainerVersion(), err)
	}
	return append(raw, '\n'), nil
}

// EmbeddedCRDDefaults returns the crddefaults file this build embeds for
// the linked trainer version, the one Realize defaults with, and false when
// it embeds none. A build that embeds other bytes than RenderCRDDefaults
// gives realizes with stale defaults until it is rebuilt.
func EmbeddedCRDDefaults() ([]byte, bool) {
	raw, err := fs.ReadFile(crdDefaultsFS, crdDefaultsPath(TrainerVersion()))
	return raw, err == nil
}
