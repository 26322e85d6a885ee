// Package linkedtrainer answers two questions about the Kubeflow Trainer this
// binary is built against: which version it is, and what that version's CRDs
// say. Every trainer version shares one module path, so a binary links exactly
// one; the version a result or report names must be that one, and the CRDs the
// schema proof validates against must be the ones shipped with the same Go
// types and webhooks.
//
// The CRDs are embedded, not read from the Go module cache at run time: a
// user who installed only the binary has no module cache and no go command.
// `go generate ./...` copies them byte for byte from the trainer module of
// every supported trainer version (go.mod's, and each
// validators/realize/trainer-*.mod) into crds/<version>/;
// TestEmbeddedCRDsMatchModules checks the copy against the module cache when
// one is available.
package linkedtrainer

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

// Module is the Go module path of Kubeflow Trainer.
const Module = "github.com/kubeflow/trainer/v2"

// UnknownVersion is what Version reports when the binary carries no module
// build information (for example a binary built outside module mode).
const UnknownVersion = "unknown"

// ModuleCRDDir is where the trainer module ships its CRDs, relative to the
// module root, and CRDGlob matches the CRDs in it (the directory also holds a
// kustomization.yaml).
const (
	ModuleCRDDir = "manifests/base/crds"
	CRDGlob      = "trainer.kubeflow.org_*.yaml"
)

// EmbedDir is the directory, relative to this package, that holds one
// subdirectory of CRDs per supported trainer version.
const EmbedDir = "crds"

//go:embed crds
var crdFS embed.FS

// ErrNoCRDs reports that the CRDs of a trainer version are not embedded.
var ErrNoCRDs = errors.New("no embedded CRDs for this trainer version")

// CRDs returns the CRD manifests of the linked trainer version, in file name
// order.
func CRDs() ([][]byte, error) { return CRDsOf(Version()) }

// CRDsOf returns the embedded CRD manifests of one trainer version, in file
// name order.
func CRDsOf(version string) ([][]byte, error) {
	if !slices.Contains(Versions(), version) {
		return nil, fmt.Errorf("%w: trainer %s (embedded: %s); add a validators/realize/trainer-%s.mod and run go generate ./...", ErrNoCRDs, version, strings.Join(Versions(), ", "), version)
	}
	names, err := fs.Glob(crdFS, path.Join(EmbedDir, version, CRDGlob))
	if err != nil {
		return nil, fmt.Errorf("listing the embedded trainer %s CRDs: %w", version, err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: %s/%s holds no %s; run go generate ./...", ErrNoCRDs, EmbedDir, version, CRDGlob)
	}
	files := make([][]byte, 0, len(names))
	for _, n := range names {
		b, err := crdFS.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("reading the embedded trainer CRD %s: %w", n, err)
		}
		files = append(files, b)
	}
	return files, nil
}

// Versions lists the trainer versions whose CRDs are embedded, sorted.
func Versions() []string {
	entries, err := crdFS.ReadDir(EmbedDir)
	if err != nil {
		// The directory is embedded at build time; without it the package
		// would not have compiled.
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

var version = sync.OnceValue(func() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		if v := moduleVersion(info, Module); v != UnknownVersion {
			return v
		}
	}
	// Test binaries carry no dependency list in their build information
	// (golang/go#33976), but every compiled function still records its
	// source file, and a module-cache source path names module@version,
	// with or without -trimpath. DeepCopy is trainer code this package
	// links anyway.
	fn := runtime.FuncForPC(reflect.ValueOf((*trainer.TrainJob).DeepCopy).Pointer())
	if fn == nil {
		return UnknownVersion
	}
	file, _ := fn.FileLine(fn.Entry())
	return versionFromSourcePath(file, Module)
})

// Version returns the version of the Kubeflow Trainer module linked into this
// binary, for example "v2.2.0", from the binary's own build information (or,
// in test binaries, which lack it, from the recorded source path of trainer
// code), so it cannot disagree with the code that produced a result.
func Version() string { return version() }

// versionFromSourcePath extracts the version from a source file path inside
// the module cache, ".../github.com/kubeflow/trainer/v2@v2.2.0/pkg/...". A
// path outside the module cache (a replace by local directory) has none and
// reads as "(devel)".
func versionFromSourcePath(file, module string) string {
	file = filepath.ToSlash(file)
	i := strings.LastIndex(file, module+"@")
	if i < 0 {
		if file == "" {
			return UnknownVersion
		}
		return "(devel)"
	}
	v := file[i+len(module)+1:]
	if j := strings.IndexByte(v, '/'); j >= 0 {
		v = v[:j]
	}
	return v
}

// moduleVersion finds path among the main module and the dependencies of
// info. A replace directive means the replacement's code is what runs, so
// its version is reported; a replacement by local directory has none and
// reads as "(devel)", the same marker Go uses for the main module.
func moduleVersion(info *debug.BuildInfo, path string) string {
	if info.Main.Path == path {
		return info.Main.Version
	}
	for _, dep := range info.Deps {
		if dep.Path != path {
			continue
		}
		if dep.Replace != nil {
			if dep.Replace.Version == "" {
				return "(devel)"
			}
			return dep.Replace.Version
		}
		return dep.Version
	}
	return UnknownVersion
}
