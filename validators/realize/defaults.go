package realize

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
)

// The trainer's API defaults (runtimeRef apiGroup and kind, suspend,
// managedBy, the MPI policy's numProcPerNode, mpiImplementation,
// sshAuthMountPath and runLauncherAsNode, ports' protocol inside pod
// templates, ...) exist only as `default:` values in its CRDs; no Go code
// applies them. The API server applies them before the controller ever sees
// an object, and the runtime framework relies on that (the MPI plugin
// dereferences numProcPerNode without a nil check). Realize therefore runs
// the API server's own structural defaulting algorithm over the objects it is
// given, with the schemas of the CRDs that ship in the linked trainer module.
//
// The CRDs themselves are 2.4 MB per trainer version and live in the module
// cache, which a built binary cannot rely on. What is embedded instead is a
// projection of each CRD's v1alpha1 schema that keeps exactly what defaulting
// reads: every node carrying a default (with its whole subtree, which
// PruneDefaults needs), and, on the way to such nodes, only type, nullable,
// properties, items and additionalProperties. The defaulting algorithm walks
// nothing else, so the projection defaults identically to the full schema.
// RenderCRDDefaults (crddefaults.go) cuts the projection from the linked
// trainer's CRDs and `go generate ./...` writes it, per trainer version
// (tools/compat --crd-defaults); TestCRDDefaultsMatchModule fails when the
// committed file differs from it, and TestProjectionDefaultsLikeFullCRD
// defaults the shipped runtimes with both the projection and the full CRDs
// and requires identical results.

//go:embed crddefaults/*.json
var crdDefaultsFS embed.FS

// crdDefaultsFile is the on-disk form of one trainer version's projections.
type crdDefaultsFile struct {
	// Source names the module directory the projections were cut from.
	Source string `json:"source"`
	// Version is the CRD version the schemas belong to.
	Version string `json:"version"`
	// Schemas maps the resource kind to its projected openAPIV3Schema.
	Schemas map[string]*apiextensionsv1.JSONSchemaProps `json:"schemas"`
}

// defaulter applies the CRD defaults of one trainer version.
type defaulter struct {
	version string
	schemas map[string]*structuralschema.Structural
}

// ErrNoCRDDefaults reports that no CRD default schemas are recorded for the
// trainer version linked into the binary; realizing without them would feed
// the runtime framework objects the API server would never hand it.
var ErrNoCRDDefaults = errors.New("no CRD default schemas recorded for the linked trainer version")

var linkedDefaulter = sync.OnceValues(func() (*defaulter, error) {
	return loadDefaulter(crdDefaultsFS, TrainerVersion())
})

// crdDefaultsPath is where the projections of a trainer version live inside
// crdDefaultsFS (and on disk, relative to the package).
func crdDefaultsPath(version string) string { return "crddefaults/" + version + ".json" }

func loadDefaulter(fsys fs.FS, version string) (*defaulter, error) {
	raw, err := fs.ReadFile(fsys, crdDefaultsPath(version))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: trainer %s (go generate ./... writes it for every trainer version generated/generate.go names; tools/compat --crd-defaults built against that version writes it alone)", ErrNoCRDDefaults, version)
	}
	if err != nil {
		return nil, fmt.Errorf("reading CRD defaults for trainer %s: %w", version, err)
	}
	var file crdDefaultsFile
	if err := json.Unmarshal(raw, &file); err != nil {
		return nil, fmt.Errorf("decoding CRD defaults for trainer %s: %w", version, err)
	}
	d := &defaulter{version: version, schemas: make(map[string]*structuralschema.Structural, len(file.Schemas))}
	for _, kind := range slices.Sorted(maps.Keys(file.Schemas)) {
		ss, err := structuralFromV1(file.Schemas[kind])
		if err != nil {
			return nil, fmt.Errorf("CRD defaults for %s (trainer %s): %w", kind, version, err)
		}
		d.schemas[kind] = ss
	}
	return d, nil
}

// structuralFromV1 turns a v1 schema into the structural form the API server
// defaults with, following the server's own order: convert to the internal
// type, build the structural schema, then prune unknown fields out of
// default values (PruneDefaults), which the server does when it loads a CRD.
func structuralFromV1(v1 *apiextensionsv1.JSONSchemaProps) (*structuralschema.Structural, error) {
	if v1 == nil {
		return nil, errors.New("schema is empty")
	}
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1, &internal, nil); err != nil {
		return nil, fmt.Errorf("converting schema: %w", err)
	}
	ss, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return nil, fmt.Errorf("building structural schema: %w", err)
	}
	if err := structuraldefaulting.PruneDefaults(ss); err != nil {
		return nil, fmt.Errorf("pruning default values: %w", err)
	}
	return ss, nil
}

// apply defaults obj, a typed trainer object of the given kind, in place.
// The object goes through its unstructured form because that is the only
// form the defaulting algorithm understands; typed objects cannot carry
// unknown fields, so the server's pruning step has nothing to do here.
func (d *defaulter) apply(kind string, obj apiruntime.Object) error {
	ss, ok := d.schemas[kind]
	if !ok {
		return fmt.Errorf("no CRD default schema for kind %s (trainer %s)", kind, d.version)
	}
	u, err := apiruntime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("converting %s to unstructured: %w", kind, err)
	}
	structuraldefaulting.Default(u, ss)
	if err := apiruntime.DefaultUnstructuredConverter.FromUnstructured(u, obj); err != nil {
		return fmt.Errorf("converting defaulted %s back: %w", kind, err)
	}
	return nil
}
