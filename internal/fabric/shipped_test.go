package fabric_test

import (
	"github.com/tcpxogen/tcpxogen/internal/reconstruction"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"

	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/generated/tcpxo"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
	"github.com/tcpxogen/tcpxogen/runtimes"
)

// The shipped worker env (profile plus reviewed overrides) judged as
// bom-check will judge it: against the profile it differs only by the LLCM
// device directory, a Note; against itself, not at all.
func TestShippedEnvKeepsTheFabric(t *testing.T) {
	in, err := shipped.LoadInputs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for profile, file := range map[string]string{
		runtimes.ProfileDefault: "a3plus_guest_config.textproto",
		runtimes.ProfileSimple:  "a3plus_guest_config_simple.textproto",
	} {
		t.Run(profile, func(t *testing.T) {
			path := reconstructionPlugin(t, tcpxo.PluginVersion, file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			rules, err := guestconfig.Parse(path, data)
			if err != nil {
				t.Fatal(err)
			}
			shipped, err := in.WorkerEnv(profile)
			if err != nil {
				t.Fatal(err)
			}
			var prof []corev1.EnvVar
			vars, _ := in.Facts.Profile(profile)
			for _, v := range vars {
				prof = append(prof, corev1.EnvVar{Name: v.Name, Value: v.Value})
			}
			got := fabric.Check(prof, rules, shipped)
			// The runtime adds NCCL_LIB_DIR (Google's README, "NCCL configs"),
			// the profile's input, and the LLCM directory an unprivileged pod needs.
			want := []fabric.Finding{
				{Path: "env NCCL_LIB_DIR", Kind: fabric.Added, Severity: fabric.Note},
				{Path: "env NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", Kind: fabric.Added, Severity: fabric.Note},
			}
			if d := cmp.Diff(want, got, cmpBrief); d != "" {
				t.Errorf("profile vs shipped (-want +got):\n%s", d)
			}
			if got := fabric.Check(shipped, rules, shipped); len(got) != 0 {
				t.Errorf("shipped vs itself: %v", got)
			}
		})
	}
}

// cmpBrief compares findings by path, kind and severity.
var cmpBrief = cmp.Comparer(func(a, b fabric.Finding) bool {
	return a.Path == b.Path && a.Kind == b.Kind && a.Severity == b.Severity
})

// The values the rule set knows for variables the profile does not export
// are the wiring's own: the runtime's aperture mount and the generated
// library directory.
func TestKnownValuesMatchTheWiring(t *testing.T) {
	for name, value := range map[string]string{
		"NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY": runtimes.ApertureDevices,
		"NCCL_LIB_DIR":                       tcpxo.LibDir,
	} {
		got := fabric.Check(nil, nil, []corev1.EnvVar{{Name: name, Value: value}})
		if len(got) != 1 || got[0].Severity != fabric.Note {
			t.Errorf("adding %s=%s: %v, want one Note", name, value, got)
		}
	}
}

// reconstructionPlugin is where a reconstructed installer's file under
// /plugins lives on disk (its own layer or one it shares with another
// release).
func reconstructionPlugin(t *testing.T, version, name string) string {
	t.Helper()
	p, err := reconstruction.LayerFile(filepath.Join("..", "..", "testdata", "installer", version), "plugins/"+name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
