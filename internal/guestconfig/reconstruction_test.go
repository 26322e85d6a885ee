package guestconfig_test

import (
	"github.com/tcpxogen/tcpxogen/internal/reconstruction"

	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tcpxogen/tcpxogen/generated/tcpxo"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
)

// The reconstruction's checker files must agree with the profiles they
// stand beside: every rule names a variable the profile exports, with the
// profile's value. The profiles are the generated v1.0.15 constants; the
// facts (testdata/installer/GUEST-CONFIG.md, end) record the
// default and simple profiles as byte-identical from v1.0.14 to v1.0.17, so
// v1.0.14 is checked against the same ones.
func TestReconstructionMatchesProfiles(t *testing.T) {
	for _, version := range []string{"v1.0.15", "v1.0.14"} {
		for _, tc := range []struct {
			file                  string
			profile               []facts.EnvVar
			enforced, recommended int
			mustEnforce           map[string]string // named by the facts
		}{
			// Facts, "Guest config checker": a third-party count of 14
			// enforced in the default config, NCCL_FASTRAK_NUM_FLOWS "2"
			// among them; the checker aborts without
			// NCCL_NVLSTREE_MAX_CHUNKSIZE since v1.0.12.
			{"a3plus_guest_config.textproto", tcpxo.DefaultProfile(), 14, 1,
				map[string]string{"NCCL_FASTRAK_NUM_FLOWS": "2", "NCCL_NVLSTREE_MAX_CHUNKSIZE": "131072"}},
			// Facts, "Guest config checker": the published excerpt with the
			// simple profile's values.
			{"a3plus_guest_config_simple.textproto", tcpxo.SimpleProfile(), 4, 1,
				map[string]string{"NCCL_CROSS_NIC": "0", "NCCL_ALGO": "Ring,Tree", "NCCL_PROTO": "Simple", "NCCL_MIN_NCHANNELS": "4"}},
		} {
			t.Run(version+"/"+tc.file, func(t *testing.T) {
				path := plugin(t, version, tc.file)
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				rules, err := guestconfig.Parse(path, data)
				if err != nil {
					t.Fatal(err)
				}
				count := map[guestconfig.Policy]int{}
				for _, r := range rules {
					count[r.Policy]++
					i := slices.IndexFunc(tc.profile, func(v facts.EnvVar) bool { return v.Name == r.Name })
					if i < 0 {
						t.Errorf("line %d: %s is not exported by the profile", r.Line, r.Name)
					} else if got := tc.profile[i].Value; got != r.Value {
						t.Errorf("line %d: %s rule value %q, profile exports %q", r.Line, r.Name, r.Value, got)
					}
					if want, ok := tc.mustEnforce[r.Name]; ok && (r.Policy != guestconfig.Enforced || r.Value != want) {
						t.Errorf("line %d: %s is %s %q; the facts say enforced %q", r.Line, r.Name, r.Policy, r.Value, want)
					}
				}
				for name := range tc.mustEnforce {
					if !slices.ContainsFunc(rules, func(r guestconfig.Rule) bool { return r.Name == name }) {
						t.Errorf("no rule for %s, which the facts say is enforced", name)
					}
				}
				if count[guestconfig.Enforced] != tc.enforced || count[guestconfig.Recommended] != tc.recommended {
					t.Errorf("%d enforced and %d recommended rules, want %d and %d",
						count[guestconfig.Enforced], count[guestconfig.Recommended], tc.enforced, tc.recommended)
				}
			})
		}
	}
}

// The facts (Google's Aug 21, 2025 release note) say the default checker
// flags NCCL_NVLS_ENABLE and NCCL_ALGO as unexpected: the default
// reconstruction must not list them.
func TestReconstructionDefaultOmitsUnexpected(t *testing.T) {
	for _, version := range []string{"v1.0.15", "v1.0.14"} {
		path := plugin(t, version, "a3plus_guest_config.textproto")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rules, err := guestconfig.Parse(path, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rules {
			if r.Name == "NCCL_NVLS_ENABLE" || r.Name == "NCCL_ALGO" {
				t.Errorf("%s:%d lists %s", path, r.Line, r.Name)
			}
		}
	}
}

// plugins is where a reconstructed installer keeps its guest configs.
// plugin is where a reconstructed installer's file under
// /plugins lives on disk (its own layer or one it shares with another
// release).
func plugin(t *testing.T, version, name string) string {
	t.Helper()
	p, err := reconstruction.LayerFile(filepath.Join("..", "..", "testdata", "installer", version), "plugins/"+name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
