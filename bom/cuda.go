package bom

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/facts"
)

// PluginCUDA is what the installer's plugin libraries bind the worker
// image's CUDA major to. The plugin loads the CUDA runtime it needs from the
// workload's library path, and the host library directory the installer
// fills carries only the driver, so a needed libcudart.so.<N> must be the
// worker image's: N is its CUDA major. A plugin set that needs no libcudart
// binds none; then the GPU driver branch is what the worker depends on.
// CUDA_VERSION of the installer image is not the rule: v1.0.17 is built on
// CUDA 12.8, qualified with 13.2, and its net plugin needs no libcudart.
type PluginCUDA struct {
	// Major is the CUDA major a needed libcudart names; 0 when none does.
	Major int
	// By lists "library needs soname" for every library that needs libcudart.
	By []string
}

// PluginCUDABinding reads the binding from the extracted libraries. No
// libraries at all means the facts predate the rule (regenerate), and two
// libraries needing different majors cannot both load: both are errors.
func PluginCUDABinding(libs []facts.Library) (PluginCUDA, error) {
	if len(libs) == 0 {
		return PluginCUDA{}, fmt.Errorf("the generated facts record no plugin library's needed sonames: regenerate with go generate ./...")
	}
	var b PluginCUDA
	majors := map[int][]string{}
	for _, l := range libs {
		for _, so := range l.Needed {
			if n, ok := facts.CUDARuntimeMajor(so); ok {
				majors[n] = append(majors[n], l.Name)
				b.By = append(b.By, l.Name+" needs "+so)
			}
		}
	}
	switch len(majors) {
	case 0:
		return b, nil
	case 1:
		for n := range majors {
			b.Major = n
		}
		return b, nil
	}
	return b, fmt.Errorf("the plugin libraries need CUDA runtimes of different majors (%s): no worker image can load them all", strings.Join(b.By, ", "))
}

// Worker judges a worker image of CUDA major workerMajor; driverBranch (the
// release's gpu-driver-version, e.g. R595, or "" when unknown) is named when
// nothing binds the CUDA major.
func (b PluginCUDA) Worker(workerMajor int, driverBranch string) (ok bool, detail string) {
	if b.Major == 0 {
		return true, "no plugin library needs libcudart, so the worker's CUDA major is not bound by the plugin (" + b.driverNote(driverBranch) + ")"
	}
	if workerMajor != b.Major {
		return false, fmt.Sprintf("%s, but the worker declares CUDA %d: NCCL would log \"Error loading libnccl-net_internal.so: libcudart.so.%d\" and fall back", strings.Join(b.By, ", "), workerMajor, b.Major)
	}
	return true, fmt.Sprintf("worker CUDA %d: %s", workerMajor, strings.Join(slices.Compact(slices.Clone(b.By)), ", "))
}

// Need says what a worker image must be built for, for a flag's help or a notice.
func (b PluginCUDA) Need(driverBranch string) string {
	if b.Major == 0 {
		return "any CUDA major: no plugin library needs libcudart (" + b.driverNote(driverBranch) + ")"
	}
	return fmt.Sprintf("CUDA %d (%s)", b.Major, strings.Join(b.By, ", "))
}

func (b PluginCUDA) driverNote(branch string) string {
	if branch == "" {
		return "the node's GPU driver branch is what matters"
	}
	return "the node's GPU driver branch is what matters: " + branch + ", GKE node flag gpu-driver-version=" + branch
}
