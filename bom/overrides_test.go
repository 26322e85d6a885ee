package bom

import (
	"slices"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/internal/facts"
)

var testProfile = []facts.EnvVar{
	{Name: "LD_LIBRARY_PATH", Value: "/usr/local/nvidia/lib64"},
	{Name: "NCCL_PROTO", Value: "Simple,LL128"},
	{Name: "NCCL_DEBUG", Value: "WARN"},
}

var testPublished = []facts.EnvVar{
	{Name: "NCCL_PROTO", Value: "Simple,LL128"},
	{Name: "NCCL_NVLS_ENABLE", Value: "1"},
}

func overridesFrom(t *testing.T, body string) *Overrides {
	t.Helper()
	o, err := ParseOverrides("overrides.yaml", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestApplyOverrides(t *testing.T) {
	o := overridesFrom(t, `overrides:
  - {name: NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY, action: add, value: /dev/aperture_devices, reason: non-privileged}
  - {name: LD_LIBRARY_PATH, action: pin, value: /usr/local/nvidia/lib64, reason: explicit}
  - {name: NCCL_DEBUG, action: replace, value: INFO, reason: louder}
  - {name: NCCL_PROTO, action: remove, reason: test}
  - {name: NCCL_NVLS_ENABLE, action: follow-profile, reason: image wins}
`)
	got, err := o.Apply("v1.0.15", testProfile, []string{"LD_LIBRARY_PATH"}, testPublished)
	if err != nil {
		t.Fatal(err)
	}
	want := []facts.EnvVar{
		{Name: "LD_LIBRARY_PATH", Value: "/usr/local/nvidia/lib64"},
		{Name: "NCCL_DEBUG", Value: "INFO"},
		{Name: "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", Value: "/dev/aperture_devices"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	if testProfile[2].Value != "WARN" {
		t.Fatal("Apply modified the caller's profile")
	}
}

func TestApplyRejectsStaleOverrides(t *testing.T) {
	for name, tc := range map[string]struct {
		entry      string
		contextual []string
		published  []facts.EnvVar
		want       string
	}{
		"add now exported":      {entry: "{name: NCCL_DEBUG, action: add, value: INFO, reason: r}", want: "the profile now exports it"},
		"replace with same":     {entry: "{name: NCCL_DEBUG, action: replace, value: WARN, reason: r}", want: "already the profile's value"},
		"replace renamed":       {entry: "{name: NCCL_OLD_NAME, action: replace, value: x, reason: r}", want: "no longer exports NCCL_OLD_NAME"},
		"remove renamed":        {entry: "{name: NCCL_OLD_NAME, action: remove, reason: r}", want: "renamed or dropped"},
		"pin no longer needed":  {entry: "{name: LD_LIBRARY_PATH, action: pin, value: /usr/local/nvidia/lib64, reason: r}", want: "no longer depends on the environment"},
		"follow, lists agree":   {entry: "{name: NCCL_PROTO, action: follow-profile, reason: r}", published: testPublished, want: "now agree"},
		"follow, nothing to do": {entry: "{name: NCCL_GONE, action: follow-profile, reason: r}", published: testPublished, want: "neither"},
		"follow, no published":  {entry: "{name: NCCL_NVLS_ENABLE, action: follow-profile, reason: r}", want: "no published NCCL config list"},
	} {
		t.Run(name, func(t *testing.T) {
			o := overridesFrom(t, "overrides:\n  - "+tc.entry+"\n")
			_, err := o.Apply("v1.0.15", testProfile, tc.contextual, tc.published)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "overrides.yaml:2") {
				t.Fatalf("got %v; want an error at overrides.yaml:2 containing %q", err, tc.want)
			}
		})
	}
}

func TestParseOverridesRejects(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"unknown action":    {"overrides:\n  - {name: A, action: set, value: x, reason: r}\n", `"set" is not an action`},
		"missing reason":    {"overrides:\n  - {name: A, action: add, value: x}\n", "reason is missing"},
		"add without value": {"overrides:\n  - {name: A, action: add, reason: r}\n", "value is missing"},
		"remove with value": {"overrides:\n  - {name: A, action: remove, value: x, reason: r}\n", "ships no value"},
		"duplicate":         {"overrides:\n  - {name: A, action: remove, reason: r}\n  - {name: A, action: remove, reason: r}\n", "already has an override"},
		"bad name":          {"overrides:\n  - {name: 1A, action: remove, reason: r}\n", "not an environment variable name"},
		"unknown field":     {"overrides:\n  - {name: A, action: remove, reason: r, why: x}\n", "why"},
		"overlapping scopes": {"overrides:\n  - {name: A, action: remove, reason: r, installers: [v1.0.16]}\n  - {name: A, action: remove, reason: r, installers: [v1.0.17, v1.0.16]}\n",
			"already has an override for the same installers"},
		"scoped and unscoped": {"overrides:\n  - {name: A, action: remove, reason: r}\n  - {name: A, action: remove, reason: r, installers: [v1.0.16]}\n", "already has an override"},
		"scope not a tag":     {"overrides:\n  - {name: A, action: remove, reason: r, installers: [\"v1.0.16 v1.0.17\"]}\n", "installers[0]"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseOverrides("overrides.yaml", []byte(tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestShippedOverridesLoad(t *testing.T) {
	o, err := LoadOverrides("overrides.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ov := range o.Overrides {
		names = append(names, ov.Name+"="+ov.Action)
	}
	for _, want := range []string{"NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY=add", "LD_LIBRARY_PATH=pin", "NCCL_NVLS_ENABLE=follow-profile"} {
		if !slices.Contains(names, want) {
			t.Errorf("shipped overrides lack %s (have %v)", want, names)
		}
	}
}

// A decision scoped to other installers is neither applied nor judged stale;
// in force, it is both.
func TestScopedOverride(t *testing.T) {
	o := overridesFrom(t, `overrides:
  - {name: NCCL_DEBUG, action: replace, value: INFO, reason: louder, installers: [v1.0.17]}
  - {name: NCCL_DEBUG, action: replace, value: TRACE, reason: loudest, installers: [v1.0.16]}
  - {name: NCCL_TELEMETRY, action: follow-profile, reason: compiled default, installers: [v1.0.17]}
`)
	got, err := o.Apply("v1.0.15", testProfile, nil, testPublished)
	if err != nil || !slices.Equal(got, testProfile) {
		t.Errorf("for v1.0.15: %v, %v; want the profile unchanged", got, err)
	}
	got, err = o.Apply("v1.0.16", testProfile, nil, testPublished)
	if err != nil || got[2] != (facts.EnvVar{Name: "NCCL_DEBUG", Value: "TRACE"}) {
		t.Errorf("for v1.0.16: %v, %v; want NCCL_DEBUG=TRACE", got, err)
	}
	// For v1.0.17 the follow-profile entry is in force, and stale against a
	// published list that lacks the variable.
	if _, err := o.Apply("v1.0.17", testProfile, nil, testPublished); err == nil || !strings.Contains(err.Error(), "overrides.yaml:4") {
		t.Errorf("for v1.0.17: %v; want the stale entry at overrides.yaml:4", err)
	}
	if !o.Decides("NCCL_TELEMETRY", "v1.0.17") || o.Decides("NCCL_TELEMETRY", "v1.0.16") {
		t.Error("Decides ignores the scope")
	}
}
