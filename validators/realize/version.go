package realize

import (
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	runtimecore "github.com/kubeflow/trainer/v2/pkg/runtime/core"
)

// TrainerModule is the Go module path of Kubeflow Trainer. Every trainer
// version shares it, which is why two versions can never be linked into one
// binary and the v2.3.0 suite runs from a second modfile.
const TrainerModule = "github.com/kubeflow/trainer/v2"

// UnknownVersion is what TrainerVersion reports when the binary carries no
// module build information (for example a binary built outside module mode).
const UnknownVersion = "unknown"

var trainerVersion = sync.OnceValue(func() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		if v := moduleVersion(info, TrainerModule); v != UnknownVersion {
			return v
		}
	}
	// Test binaries carry no dependency list in their build information
	// (golang/go#33976), but every compiled function still records its
	// source file, and a module-cache source path names module@version,
	// with or without -trimpath. runtimecore.New is trainer code that
	// realization links anyway.
	fn := runtime.FuncForPC(reflect.ValueOf(runtimecore.New).Pointer())
	if fn == nil {
		return UnknownVersion
	}
	file, _ := fn.FileLine(fn.Entry())
	return versionFromSourcePath(file, TrainerModule)
})

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

// TrainerVersion returns the version of the Kubeflow Trainer module linked
// into this binary, for example "v2.2.0". Results and reports carry it so a
// statement such as "resourcesPerNode drops the GPU limit" always says which
// trainer it describes. The value comes from the binary's own build
// information (or, in test binaries, which lack it, from the recorded source
// path of trainer code), so it cannot disagree with the code that produced a
// result.
func TrainerVersion() string { return trainerVersion() }

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
