package bom

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/internal/facts"
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
	// GKE's GPUDirect-TCPXO release notes publish 16 pairs, v1.0.0 (Apr 17,
	// 2024) to v1.0.17 (Jun 26, 2026); v1.0.10 and v1.0.13 were never
	// published, and Feb 27 2025 and Sept 06 2024 announce GKE support only.
	bySource := map[string]int{}
	for _, p := range r.Pairs {
		bySource[p.Source]++
	}
	if bySource[SourceReleaseNotes] != 16 || bySource[SourceManifests] != 0 {
		t.Errorf("pairs by source = %v, want 16 from the release notes", bySource)
	}
	for v, want := range map[string]Pair{
		// Jun 26 2026: "595.71.05 and above ... 1.33.5-gke.1125000 ...
		// gpu-driver-version=R595", precompiled libs v1.0.5, CUDA 13.2.
		"v1.0.17": {Date: "2026-06-26", Installer: "v1.0.17", Daemon: "v1.0.23", Source: SourceReleaseNotes, NCCL: "2.28.7-1", CUDA: "13.2", Driver: "595.71.05",
			DriverBranch: "R595", GKE: "1.33.5-gke.1125000", PrecompiledLibs: "v1.0.5", GLibc: "2.35"},
		// Apr 30 2026: 580.65.06, R580, precompiled libs v1.0.4, CUDA 12.8.
		"v1.0.16": {Date: "2026-04-30", Installer: "v1.0.16", Daemon: "v1.0.22", Source: SourceReleaseNotes, NCCL: "2.28.7-1", CUDA: "12.8", Driver: "580.65.06",
			DriverBranch: "R580", GKE: "1.33.5-gke.1125000", PrecompiledLibs: "v1.0.4", GLibc: "2.35"},
		"v1.0.15": {Date: "2026-01-09", Installer: "v1.0.15", Daemon: "v1.0.21", Source: SourceReleaseNotes, NCCL: "2.28.7-1", CUDA: "12.8", Driver: "580.95.05", GLibc: "2.35"},
		// The oldest sections: May 30 2024, May 20 2024 (the same daemon) and Apr 17 2024.
		"v1.0.2": {Date: "2024-05-30", Installer: "v1.0.2", Daemon: "v1.0.8", Source: SourceReleaseNotes},
		"v1.0.1": {Date: "2024-05-20", Installer: "v1.0.1", Daemon: "v1.0.8", Source: SourceReleaseNotes},
		"v1.0.0": {Date: "2024-04-17", Installer: "v1.0.0", Daemon: "v1.0.6-sctp", Source: SourceReleaseNotes},
	} {
		if p, ok := r.PairFor(v); !ok || p != want {
			t.Errorf("PairFor(%q) = %+v, %v; want %+v", v, p, ok, want)
		}
	}
	// "Starting from v1.0.9, glibc version 2.35 or higher is required."
	for _, p := range r.Pairs {
		since := p.Date >= "2025-05-01"
		if (p.GLibc == "2.35") != since {
			t.Errorf("%s: glibc %q; want 2.35 exactly for the releases since v1.0.9-1", p.Installer, p.GLibc)
		}
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
	// Counts as published (the notes test holds every entry to the notes):
	// 27 for v1.0.16 and v1.0.17, 25 for v1.0.14 and v1.0.15.
	for v, want := range map[string]int{"v1.0.17": 27, "v1.0.16": 27, "v1.0.15": 25, "v1.0.14": 25} {
		c, ok := r.ConfigFor(v)
		if !ok {
			t.Errorf("no NCCL config for %s", v)
			continue
		}
		if len(c.Env) != want || c.LibDir != "/usr/local/tcpxo/lib64" || c.Source == "" {
			t.Errorf("%s: %d variables, libDir %q, source %q; want %d, /usr/local/tcpxo/lib64 and a source", v, len(c.Env), c.LibDir, c.Source, want)
		}
	}
	c, _ := r.ConfigFor("v1.0.17")
	env := map[string]string{}
	for _, e := range c.EnvIn("/usr/local/nvidia/lib64") {
		env[e.Name] = e.Value
		if strings.Contains(e.Value, "/usr/local/tcpxo") {
			t.Errorf("%s=%s: the published lib dir must be substituted", e.Name, e.Value)
		}
	}
	for name, want := range map[string]string{
		"NCCL_NVLS_ENABLE":                              "1",
		"NCCL_NET_PLUGIN_TELEMETRY_MODE":                "0",
		"LD_LIBRARY_PATH":                               "${LD_LIBRARY_PATH}:/usr/local/nvidia/lib64",
		"NCCL_TUNER_CONFIG_PATH":                        "/usr/local/nvidia/lib64/a3plus_tuner_config.textproto",
		"NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE": "/usr/local/nvidia/lib64/a3plus_guest_config.textproto",
		"NCCL_FASTRAK_IFNAME":                           "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8",
		"NCCL_PROTO":                                    "Simple,LL128",
		"NCCL_DEBUG":                                    "WARN",
	} {
		if env[name] != want {
			t.Errorf("v1.0.17 %s = %q, want %q", name, env[name], want)
		}
	}
	// The v1.0.14/v1.0.15 lists carry no LD_LIBRARY_PATH.
	for _, v := range []string{"v1.0.14", "v1.0.15"} {
		c, _ := r.ConfigFor(v)
		if slices.ContainsFunc(c.Env, func(e facts.EnvVar) bool {
			return e.Name == "LD_LIBRARY_PATH" || e.Name == "NCCL_NET_PLUGIN_TELEMETRY_MODE"
		}) {
			t.Errorf("%s lists LD_LIBRARY_PATH or NCCL_NET_PLUGIN_TELEMETRY_MODE; its notes section does not", v)
		}
	}
}

// The retired daemon flags are release data with their sources: Google's
// release notes for --num_nics (retired in installer v1.0.14 / daemon
// v1.0.20, for every pinned daemon), the round-3 facts (NVCRE's catalog,
// daemon >= v1.0.21) for the flags v1.0.21 retired or rejects.
func TestRealRetiredDaemonFlags(t *testing.T) {
	_, r := loadReal(t)
	const notes, round3 = "Google's release notes", "the round-3 facts (NVCRE's catalog, daemon >= v1.0.21)"
	want := map[string]RetiredDaemonFlag{
		"--num_nics":                    {From: "", Fatal: false, Source: notes},
		"--uid":                         {From: "v1.0.21", Fatal: false, Source: round3},
		"--alsologtostderr":             {From: "v1.0.21", Fatal: false, Source: round3},
		"--enforce_kernel_ipv6_support": {From: "v1.0.21", Fatal: true, Source: round3},
	}
	if len(r.RetiredDaemonFlags) != len(want) {
		t.Errorf("%d retired daemon flags, want %d", len(r.RetiredDaemonFlags), len(want))
	}
	for _, f := range r.RetiredDaemonFlags {
		w, ok := want[f.Flag]
		if !ok || f.From != w.From || f.Fatal != w.Fatal || f.Source != w.Source {
			t.Errorf("%s: from %q, fatal %v, source %q; want %+v", f.Flag, f.From, f.Fatal, f.Source, w)
		}
	}
}
