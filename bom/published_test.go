package bom

import (
	"testing"

	"github.com/tcpxogen/tcpxogen/internal/facts"
)

// The published list, its lib directory replaced by the workload's, is
// compared with the profile by name; each difference carries the decision in
// force for the installer, nil when none is.
func TestPublishedDifferences(t *testing.T) {
	cfg := NCCLConfig{Installer: "v1.0.15", LibDir: "/usr/local/tcpxo/lib64", Env: []facts.EnvVar{
		{Name: "NCCL_TUNER_CONFIG_PATH", Value: "/usr/local/tcpxo/lib64/a3plus_tuner_config.textproto"},
		{Name: "NCCL_PROTO", Value: "Simple,LL128"},
		{Name: "NCCL_NVLS_ENABLE", Value: "1"},
	}}
	g := &facts.Facts{PluginVersion: "v1.0.15", LibDir: "/usr/local/nvidia/lib64", DefaultProfile: []facts.EnvVar{
		{Name: "NCCL_TUNER_CONFIG_PATH", Value: "/usr/local/nvidia/lib64/a3plus_tuner_config.textproto"},
		{Name: "NCCL_PROTO", Value: "Simple"},
		{Name: "NCCL_DEBUG", Value: "WARN"},
	}}
	o := overridesFrom(t, `overrides:
  - {name: NCCL_NVLS_ENABLE, action: follow-profile, reason: the image wins}
  - {name: NCCL_DEBUG, action: follow-profile, reason: another installer's, installers: [v1.0.14]}
`)
	got := PublishedDifferences(cfg, g, o)
	want := []string{
		`NCCL_DEBUG: published unset, profile "WARN"`,
		`NCCL_NVLS_ENABLE: published "1", profile unset`,
		`NCCL_PROTO: published "Simple,LL128", profile "Simple"`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i, d := range got {
		if d.String() != want[i] {
			t.Errorf("difference %d = %q, want %q", i, d, want[i])
		}
		if decided := d.Decision != nil; decided != (d.Name == "NCCL_NVLS_ENABLE") {
			t.Errorf("%s: decision %+v", d.Name, d.Decision)
		}
	}
	if n := len(PublishedDifferences(cfg, g, nil)); n != 3 {
		t.Errorf("without overrides: %d differences", n)
	}
}
