package bom

import (
	"path/filepath"
	"strings"
	"testing"
)

// These tests load the real data files, so they fail when an edit breaks them.

func loadReal(t *testing.T) (*BOM, *Releases) {
	t.Helper()
	// Tests run in the package directory; DefaultPath is relative to the module root.
	b, r, err := LoadAll(filepath.Join("..", DefaultPath()), filepath.Join("..", DefaultReleasesPath()))
	if err != nil {
		t.Fatalf("the repository's data files do not load:\n%v", err)
	}
	return b, r
}

func TestDefaultPaths(t *testing.T) {
	if got := filepath.ToSlash(DefaultPath()); got != RepoPath || RepoPath != "bom/bom.yaml" {
		t.Errorf("DefaultPath = %q, RepoPath = %q", got, RepoPath)
	}
	if got := filepath.ToSlash(DefaultReleasesPath()); got != ReleasesRepoPath || ReleasesRepoPath != "bom/releases.yaml" {
		t.Errorf("DefaultReleasesPath = %q, ReleasesRepoPath = %q", got, ReleasesRepoPath)
	}
}

func TestRealBOM(t *testing.T) {
	b, _ := loadReal(t)
	for _, role := range b.ImageRoles() {
		img := role.Image
		got := img.Repository() + ":" + img.Tag() + "@" + img.Digest()
		if img.Tag() == "" {
			got = img.Repository() + "@" + img.Digest()
		}
		if got != img.Reference {
			t.Errorf("%s: parts reassemble to %q, want %q", role.Name, got, img.Reference)
		}
	}
	if b.Trainer.Module != "github.com/kubeflow/trainer/v2" || b.JobSet.Module != "sigs.k8s.io/jobset" {
		t.Errorf("trainer/jobset modules = %q, %q", b.Trainer.Module, b.JobSet.Module)
	}
}

func TestRealPairs(t *testing.T) {
	_, r := loadReal(t)
	// GKE's GPUDirect-TCPXO release notes publish 11 pairs (v1.0.3..v1.0.15);
	// google/nccl-plugin-gpudirect-tcpxo tags v1.0.16 and v1.0.17 and
	// container-engine-accelerators PRs #620 and #626 publish two more.
	bySource := map[string]int{}
	for _, p := range r.Pairs {
		bySource[p.Source]++
	}
	if bySource[SourceReleaseNotes] != 11 || bySource[SourceManifests] != 2 {
		t.Errorf("pairs by source = %v, want 11 from the release notes and 2 from the manifests", bySource)
	}
	for v, want := range map[string]Pair{
		// Tag notes: "qualified with CUDA 12.8, GPU driver 580.65.06" / "CUDA 13.2, GPU driver 595.71.05".
		"v1.0.16": {Daemon: "v1.0.22", Source: SourceManifests, CUDA: "12.8", Driver: "580.65.06"},
		"v1.0.17": {Daemon: "v1.0.23", Source: SourceManifests, CUDA: "13.2", Driver: "595.71.05"},
	} {
		p, ok := r.PairFor(v)
		if !ok || p.Daemon != want.Daemon || p.Source != want.Source || p.CUDA != want.CUDA || p.Driver != want.Driver {
			t.Errorf("PairFor(%q) = %+v, %v; want %+v", v, p, ok, want)
		}
	}
	p, ok := r.PairFor("v1.0.15")
	if !ok || p.Daemon != "v1.0.21" || p.NCCL != "2.28.7-1" || p.Date != "2026-01-09" {
		t.Errorf("PairFor(v1.0.15) = %+v, %v; want daemon v1.0.21, nccl 2.28.7-1", p, ok)
	}
	for v, want := range map[string]string{"v1.0.9-1": "v1.0.15", "v1.0.7": "v1.0.13_1", "v1.0.3": "v1.0.09"} {
		if p, ok := r.PairFor(v); !ok || p.Daemon != want {
			t.Errorf("PairFor(%q) = %+v, %v; want daemon %q", v, p, ok, want)
		}
	}
	if p, _ := r.PairFor("v1.0.8-1"); p.NCCL != "2.21.5–2.23.4" {
		t.Errorf("v1.0.8-1 nccl = %q, want the published range", p.NCCL)
	}
	if p, _ := r.PairFor("v1.0.7"); p.NCCL != "" {
		t.Errorf("v1.0.7 nccl = %q, want empty (not published)", p.NCCL)
	}
	// v1.0.21-rc1 and v1.0.9 are not tags of record.
	for _, v := range []string{"v1.0.21-rc1", "v1.0.9", "v1.0.21"} {
		if p, ok := r.PairFor(v); ok {
			t.Errorf("PairFor(%q) = %+v, want not found", v, p)
		}
	}
}

func TestRealNCCLConfigs(t *testing.T) {
	_, r := loadReal(t)
	c, ok := r.ConfigFor("v1.0.15")
	if !ok {
		t.Fatal("no NCCL config for v1.0.15")
	}
	if len(c.Env) != 26 {
		t.Errorf("v1.0.15 has %d variables, want 26", len(c.Env))
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if strings.Contains(e.Value, "$") {
			t.Errorf("%s=%s: NCCL_LIB_DIR must be substituted", e.Name, e.Value)
		}
	}
	for name, want := range map[string]string{
		"NCCL_NVLS_ENABLE":                              "1",
		"LD_LIBRARY_PATH":                               "/usr/local/nvidia/lib64",
		"NCCL_TUNER_CONFIG_PATH":                        "/usr/local/nvidia/lib64/a3plus_tuner_config.textproto",
		"NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE": "/usr/local/nvidia/lib64/a3plus_guest_config.textproto",
		"NCCL_FASTRAK_IFNAME":                           "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8",
		"NCCL_PROTO":                                    "Simple,LL128",
		"NCCL_DEBUG":                                    "WARN",
	} {
		if env[name] != want {
			t.Errorf("%s = %q, want %q", name, env[name], want)
		}
	}
	if c.Source == "" {
		t.Error("v1.0.15 config has no source")
	}

	old, ok := r.ConfigFor("v1.0.14")
	if !ok {
		t.Fatal("no NCCL config for v1.0.14")
	}
	if len(old.Env) != len(c.Env) {
		t.Fatalf("v1.0.14 has %d variables, want the same %d as v1.0.15", len(old.Env), len(c.Env))
	}
	for i := range old.Env {
		if old.Env[i] != c.Env[i] {
			t.Errorf("v1.0.14 env[%d] = %+v, v1.0.15 has %+v", i, old.Env[i], c.Env[i])
		}
	}
	if !strings.Contains(old.Source, "not verified") {
		t.Errorf("v1.0.14 source %q must say the list is assumed, not verified", old.Source)
	}
}
