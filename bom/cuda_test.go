package bom

import (
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/internal/facts"
)

// The plugin libraries' needed libcudart binds the worker's CUDA major; none
// binds nothing, two majors cannot load together, and no libraries at all
// means facts that predate the rule.
func TestPluginCUDABinding(t *testing.T) {
	net12 := facts.Library{Name: "libnccl-net.so", Needed: []string{"libc.so.6", "libcudart.so.12"}}
	tuner := facts.Library{Name: "libnccl-tuner.so", Needed: []string{"libc.so.6"}}
	b, err := PluginCUDABinding([]facts.Library{net12, tuner})
	if err != nil || b.Major != 12 || strings.Join(b.By, ",") != "libnccl-net.so needs libcudart.so.12" {
		t.Fatalf("one libcudart.so.12: %+v, %v", b, err)
	}
	if ok, detail := b.Worker(13, "R580"); ok || !strings.Contains(detail, "libcudart.so.12, but the worker declares CUDA 13") {
		t.Errorf("a CUDA 13 worker: %v %q", ok, detail)
	}
	if ok, _ := b.Worker(12, ""); !ok {
		t.Error("a CUDA 12 worker is refused")
	}

	b, err = PluginCUDABinding([]facts.Library{tuner})
	if err != nil || b.Major != 0 {
		t.Fatalf("no libcudart: %+v, %v", b, err)
	}
	if ok, detail := b.Worker(13, "R595"); !ok || !strings.Contains(detail, "gpu-driver-version=R595") {
		t.Errorf("nothing binds the worker, the driver branch is named: %v %q", ok, detail)
	}
	if need := b.Need(""); !strings.HasPrefix(need, "any CUDA major") {
		t.Errorf("Need = %q", need)
	}

	if _, err := PluginCUDABinding([]facts.Library{net12, {Name: "libother.so", Needed: []string{"libcudart.so.13"}}}); err == nil || !strings.Contains(err.Error(), "different majors") {
		t.Errorf("two majors: %v", err)
	}
	if _, err := PluginCUDABinding(nil); err == nil || !strings.Contains(err.Error(), "regenerate") {
		t.Errorf("no libraries: %v", err)
	}
}
