package bomcheck

import (
	"context"
	"fmt"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated"
)

// checkWorkerCUDA holds the worker image's declared CUDA major to what the
// plugin libraries need (bom.PluginCUDA): a needed libcudart.so.<N> binds
// it to N; a plugin set that needs none binds nothing, and the driver branch
// the release names is what matters.
func checkWorkerCUDA(_ context.Context, t *Tree) Result {
	files := []string{bom.RepoPath, generated.FactsFile, bom.ReleasesRepoPath}
	if r := need(files, t.BOMErr, t.GeneratedErr, t.ReleasesErr); r != nil {
		return *r
	}
	binding, err := bom.PluginCUDABinding(t.Generated.PluginLibraries)
	if err != nil {
		return fail(files, regenerate, "installer %s: %v", t.Generated.PluginVersion, err)
	}
	pair, _ := t.Releases.PairFor(t.Generated.PluginVersion)
	w := t.BOM.Images.Worker
	ok, detail := binding.Worker(w.CUDAMajor, pair.DriverBranch)
	if !ok {
		return fail(files, fmt.Sprintf("pin a worker image built for CUDA %d and set images.worker.cudaMajor: %d", binding.Major, binding.Major),
			"worker %s, installer %s: %s", w.Reference, t.Generated.PluginVersion, detail)
	}
	return pass("installer %s: %s (image built on CUDA %s)", t.Generated.PluginVersion, detail, t.Generated.CUDAVersion)
}
