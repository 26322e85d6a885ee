package fabric

import (
	"github.com/tcpxogen/tcpxogen/internal/reconstruction"

	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/generated/tcpxo"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
)

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

func loadRules(t *testing.T, rel string) []guestconfig.Rule {
	t.Helper()
	// "reconstruction/<version>/<file>" names a reconstructed installer's
	// config; anything else is under guestconfig's testdata.
	path := filepath.Join("..", "guestconfig", "testdata", rel)
	if parts := strings.Split(filepath.ToSlash(rel), "/"); len(parts) == 3 && parts[0] == "reconstruction" {
		path = reconstructionPlugin(t, parts[1], parts[2])
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := guestconfig.Parse(path, data)
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

func env(vars []facts.EnvVar) []corev1.EnvVar {
	out := make([]corev1.EnvVar, len(vars))
	for i, v := range vars {
		out[i] = corev1.EnvVar{Name: v.Name, Value: v.Value}
	}
	return out
}

// runtimeEnv is the default profile as the runtime ships it: plus the LLCM
// device directory a non-privileged pod needs.
func runtimeEnv() []corev1.EnvVar {
	return append(env(tcpxo.DefaultProfile()), corev1.EnvVar{Name: "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", Value: "/dev/aperture_devices"})
}

// edit returns a copy of base with name set to value, or removed when
// value is nil, or appended when absent.
func edit(base []corev1.EnvVar, name string, value *corev1.EnvVar) []corev1.EnvVar {
	out := slices.Clone(base)
	i := slices.IndexFunc(out, func(e corev1.EnvVar) bool { return e.Name == name })
	switch {
	case value == nil && i >= 0:
		return slices.Delete(out, i, i+1)
	case value == nil:
		return out
	case i >= 0:
		out[i] = *value
		return out
	}
	return append(out, *value)
}

func set(name, value string) *corev1.EnvVar { return &corev1.EnvVar{Name: name, Value: value} }

// brief is the part of a finding the tables compare exactly.
type brief struct {
	Path     string
	Kind     Kind
	Severity Severity
}

func briefs(fs []Finding) []brief {
	out := make([]brief, len(fs))
	for i, f := range fs {
		out[i] = brief{f.Path, f.Kind, f.Severity}
	}
	return out
}

func TestCheck(t *testing.T) {
	defRules := loadRules(t, "reconstruction/v1.0.15/a3plus_guest_config.textproto")
	simpleRules := loadRules(t, "reconstruction/v1.0.15/a3plus_guest_config_simple.textproto")
	shipped := runtimeEnv()
	withLibDir := edit(shipped, "NCCL_LIB_DIR", set("NCCL_LIB_DIR", tcpxo.LibDir))
	simple := append(env(tcpxo.SimpleProfile()), corev1.EnvVar{Name: "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", Value: "/dev/aperture_devices"})
	cmRef := &corev1.EnvVar{Name: "NCCL_PROTO", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "nccl"}, Key: "proto"}}}
	for _, tc := range []struct {
		name      string
		shipped   []corev1.EnvVar
		rules     []guestconfig.Rule
		candidate []corev1.EnvVar
		want      []brief
		reason    string // substring of the first finding's Reason
		fix       string // substring of its Fix
	}{
		{"unchanged", shipped, defRules, shipped, nil, "", ""},
		{"unrelated addition", shipped, defRules, edit(shipped, "MY_APP_FLAG", set("MY_APP_FLAG", "1")), nil, "", ""},
		// The user guide's pitfall.
		{"socket interface", shipped, defRules, edit(shipped, "NCCL_SOCKET_IFNAME", set("NCCL_SOCKET_IFNAME", "eth1")),
			[]brief{{"env NCCL_SOCKET_IFNAME", Changed, Fatal}}, `NCCL_SOCKET_IFNAME is "eth1" where tcpxogen ships "eth0"`, `restore NCCL_SOCKET_IFNAME="eth0"`},
		// Additions of transport and plugin selection: the second
		// reproduction.
		{"NCCL_NET=Socket", shipped, defRules, edit(shipped, "NCCL_NET", set("NCCL_NET", "Socket")),
			[]brief{{"env NCCL_NET", Added, Fatal}}, "routes NCCL off the FasTrak plugin onto TCP", "remove NCCL_NET"},
		{"NCCL_NET_PLUGIN=none", shipped, defRules, edit(shipped, "NCCL_NET_PLUGIN", set("NCCL_NET_PLUGIN", "none")),
			[]brief{{"env NCCL_NET_PLUGIN", Added, Fatal}}, "falls back to TCP sockets", "remove NCCL_NET_PLUGIN"},
		{"NCCL_NET_PLUGIN empty", shipped, defRules, edit(shipped, "NCCL_NET_PLUGIN", set("NCCL_NET_PLUGIN", "")),
			[]brief{{"env NCCL_NET_PLUGIN", Added, Fatal}}, "", ""},
		{"NCCL_NET=FasTrak", shipped, defRules, edit(shipped, "NCCL_NET", set("NCCL_NET", "fastrak")),
			[]brief{{"env NCCL_NET", Added, Warning}}, "forces the FasTrak network NCCL uses anyway", ""},
		// Enforced rules, whatever the shipped env says.
		{"enforced change", shipped, defRules, edit(shipped, "NCCL_PROTO", set("NCCL_PROTO", "Simple")),
			[]brief{{"env NCCL_PROTO", EnforcedViolation, Fatal}},
			`the installer's guest config enforces NCCL_PROTO="Simple,LL128" and here it is "Simple": the plugin aborts or hangs at NCCL init`,
			`set NCCL_PROTO="Simple,LL128"`},
		{"enforced removal", shipped, defRules, edit(shipped, "NCCL_NVLSTREE_MAX_CHUNKSIZE", nil),
			[]brief{{"env NCCL_NVLSTREE_MAX_CHUNKSIZE", EnforcedViolation, Fatal}}, "and here it is unset", ""},
		{"enforced from a ConfigMap", shipped, defRules, edit(shipped, "NCCL_PROTO", cmRef),
			[]brief{{"env NCCL_PROTO", EnforcedViolation, Fatal}}, `set from ConfigMap "nccl" key "proto", a value tcpxogen cannot see`, ""},
		{"enforced FasTrak setting", shipped, defRules, edit(shipped, "NCCL_FASTRAK_NUM_FLOWS", set("NCCL_FASTRAK_NUM_FLOWS", "4")),
			[]brief{{"env NCCL_FASTRAK_NUM_FLOWS", EnforcedViolation, Fatal}}, "", ""},
		{"shipped env breaks a rule, candidate keeps it", edit(shipped, "NCCL_PROTO", set("NCCL_PROTO", "LL")), defRules, edit(shipped, "NCCL_PROTO", set("NCCL_PROTO", "LL")),
			[]brief{{"env NCCL_PROTO", EnforcedViolation, Fatal}}, "", ""},
		// The FasTrak plugin's own settings, enforced or not.
		{"FasTrak timeout", shipped, defRules, edit(shipped, "NCCL_FASTRAK_PLUGIN_ACCEPT_TIMEOUT_MS", set("NCCL_FASTRAK_PLUGIN_ACCEPT_TIMEOUT_MS", "1000")),
			[]brief{{"env NCCL_FASTRAK_PLUGIN_ACCEPT_TIMEOUT_MS", Changed, Fatal}}, "drive the FasTrak plugin itself", ""},
		{"FasTrak interfaces removed", shipped, defRules, edit(shipped, "NCCL_FASTRAK_IFNAME", nil),
			[]brief{{"env NCCL_FASTRAK_IFNAME", Removed, Fatal}}, "is removed (shipped", "keep NCCL_FASTRAK_IFNAME="},
		{"FasTrak setting added", shipped, defRules, edit(shipped, "NCCL_FASTRAK_NEW_KNOB", set("NCCL_FASTRAK_NEW_KNOB", "1")),
			[]brief{{"env NCCL_FASTRAK_NEW_KNOB", Added, Fatal}}, "", ""},
		{"LLCM directory removed", shipped, defRules, edit(shipped, "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", nil),
			[]brief{{"env NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", Removed, Fatal}}, "", ""},
		// bom-check's view: the profile against the runtime's env.
		{"LLCM directory added with its value", env(tcpxo.DefaultProfile()), defRules, shipped,
			[]brief{{"env NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", Added, Note}}, "a non-privileged pod needs it", "none needed"},
		{"LLCM directory added with another value", env(tcpxo.DefaultProfile()), defRules,
			edit(shipped, "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", set("NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", "/dev")),
			[]brief{{"env NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", Added, Fatal}}, "", `set NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY="/dev/aperture_devices", or remove it`},
		{"NCCL_LIB_DIR right", shipped, defRules, edit(shipped, "NCCL_LIB_DIR", set("NCCL_LIB_DIR", "/usr/local/nvidia/lib64")),
			[]brief{{"env NCCL_LIB_DIR", Added, Note}}, "", ""},
		{"NCCL_LIB_DIR wrong", shipped, defRules, edit(shipped, "NCCL_LIB_DIR", set("NCCL_LIB_DIR", "/opt/nccl")),
			[]brief{{"env NCCL_LIB_DIR", Added, Fatal}}, "", ""},
		// The runtime ships NCCL_LIB_DIR (Google's README, "NCCL configs":
		// set it, then source ${NCCL_LIB_DIR}/nccl-env-profile.sh). NCCL does
		// not read it: dropping it breaks only a command that sources the
		// profile, which then fails at start (a Warning); pointing it
		// elsewhere sources another profile's plugin paths (Fatal).
		{"NCCL_LIB_DIR dropped from the shipped env", withLibDir, defRules, shipped,
			[]brief{{"env NCCL_LIB_DIR", Removed, Warning}}, "NCCL does not read it, but a command that runs `source ${NCCL_LIB_DIR}/nccl-env-profile.sh`",
			`keep NCCL_LIB_DIR="/usr/local/nvidia/lib64" as shipped`},
		{"NCCL_LIB_DIR changed from the shipped value", withLibDir, defRules, edit(withLibDir, "NCCL_LIB_DIR", set("NCCL_LIB_DIR", "/opt/nccl")),
			[]brief{{"env NCCL_LIB_DIR", Changed, Fatal}}, "takes the plugin, tuner and guest config from", `restore NCCL_LIB_DIR="/usr/local/nvidia/lib64"`},
		// Library path.
		{"library path appended", shipped, defRules, edit(shipped, "LD_LIBRARY_PATH", set("LD_LIBRARY_PATH", "/usr/local/nvidia/lib64:/opt/app/lib")),
			[]brief{{"env LD_LIBRARY_PATH", Changed, Note}}, "keeps the installer's directories first", ""},
		{"library path prepended", shipped, defRules, edit(shipped, "LD_LIBRARY_PATH", set("LD_LIBRARY_PATH", "/opt/nccl/lib:/usr/local/nvidia/lib64")),
			[]brief{{"env LD_LIBRARY_PATH", Changed, Warning}}, "shadows the installer's", ""},
		{"library path replaced", shipped, defRules, edit(shipped, "LD_LIBRARY_PATH", set("LD_LIBRARY_PATH", "/opt/app/lib")),
			[]brief{{"env LD_LIBRARY_PATH", Changed, Fatal}}, "NCCL falls back to TCP sockets", `restore LD_LIBRARY_PATH="/usr/local/nvidia/lib64"`},
		{"library path removed", shipped, defRules, edit(shipped, "LD_LIBRARY_PATH", nil),
			[]brief{{"env LD_LIBRARY_PATH", Removed, Fatal}}, "", ""},
		// Recommended and logging.
		{"recommended difference", shipped, defRules, edit(shipped, "NCCL_TUNER_PLUGIN", set("NCCL_TUNER_PLUGIN", "none")),
			[]brief{{"env NCCL_TUNER_PLUGIN", RecommendedDifference, Warning}}, `recommends NCCL_TUNER_PLUGIN="libnccl-tuner.so" and here it is "none"`, ""},
		{"candidate follows a recommendation the shipped env did not", edit(shipped, "NCCL_TUNER_PLUGIN", set("NCCL_TUNER_PLUGIN", "x")), defRules, shipped,
			[]brief{{"env NCCL_TUNER_PLUGIN", Changed, Note}}, "the value the installer's guest config recommends", ""},
		{"logging", shipped, defRules,
			edit(edit(edit(shipped, "NCCL_DEBUG", set("NCCL_DEBUG", "INFO")), "NCCL_DEBUG_SUBSYS", nil), "NCCL_DEBUG_FILE", set("NCCL_DEBUG_FILE", "/tmp/nccl.%h.%p")),
			[]brief{{"env NCCL_DEBUG", Changed, Note}, {"env NCCL_DEBUG_SUBSYS", Removed, Note}, {"env NCCL_DEBUG_FILE", Added, Note}}, "logging only", "none needed"},
		// Unlisted NCCL variables: the checker flags them as unexpected,
		// which settles the release notes' NCCL_NVLS_ENABLE=1.
		{"NCCL_NVLS_ENABLE on the default profile", shipped, defRules, edit(shipped, "NCCL_NVLS_ENABLE", set("NCCL_NVLS_ENABLE", "1")),
			[]brief{{"env NCCL_NVLS_ENABLE", Added, Warning}}, "the checker reports it as unexpected", "tcpxogen validate"},
		{"NCCL_ALGO on the default profile", shipped, defRules, edit(shipped, "NCCL_ALGO", set("NCCL_ALGO", "Ring")),
			[]brief{{"env NCCL_ALGO", Added, Warning}}, "", ""},
		// NCCL env docs: NCCL_IB_DISABLE only turns off NCCL's internal
		// IB transport; the FasTrak plugin is not it.
		{"NCCL_IB_DISABLE", shipped, defRules, edit(shipped, "NCCL_IB_DISABLE", set("NCCL_IB_DISABLE", "1")),
			[]brief{{"env NCCL_IB_DISABLE", Added, Warning}}, "", ""},
		// Tuning the simple profile's guest config does not enforce.
		{"simple: tuning changed", simple, simpleRules, edit(simple, "NCCL_P2P_NET_CHUNKSIZE", set("NCCL_P2P_NET_CHUNKSIZE", "131072")),
			[]brief{{"env NCCL_P2P_NET_CHUNKSIZE", Changed, Warning}}, "does not enforce it, but A3 Mega was qualified with the shipped value", `keep NCCL_P2P_NET_CHUNKSIZE="524288"`},
		{"simple: tuning removed", simple, simpleRules, edit(simple, "NCCL_NVLS_ENABLE", nil),
			[]brief{{"env NCCL_NVLS_ENABLE", Removed, Warning}}, "", ""},
		{"simple: enforced algorithm", simple, simpleRules, edit(simple, "NCCL_ALGO", nil),
			[]brief{{"env NCCL_ALGO", EnforcedViolation, Fatal}}, "", ""},
		{"GPUs hidden", shipped, defRules, edit(shipped, "CUDA_VISIBLE_DEVICES", set("CUDA_VISIBLE_DEVICES", "0")),
			[]brief{{"env CUDA_VISIBLE_DEVICES", Changed, Warning}}, "", ""},
		{"shipped non-NCCL variable changed", append(slices.Clone(shipped), corev1.EnvVar{Name: "APP", Value: "a"}), defRules,
			append(slices.Clone(shipped), corev1.EnvVar{Name: "APP", Value: "b"}),
			[]brief{{"env APP", Changed, Warning}}, "", ""},
		// The kubelet takes the last entry of a name.
		{"later entry wins", shipped, defRules,
			append(edit(shipped, "NCCL_SOCKET_IFNAME", set("NCCL_SOCKET_IFNAME", "eth1")), corev1.EnvVar{Name: "NCCL_SOCKET_IFNAME", Value: "eth0"}),
			nil, "", ""},
		{"later entry loses the fabric", shipped, defRules, append(slices.Clone(shipped), corev1.EnvVar{Name: "NCCL_SOCKET_IFNAME", Value: "eth1"}),
			[]brief{{"env NCCL_SOCKET_IFNAME", Changed, Fatal}}, "", ""},
		// One finding per variable, in shipped, rules, candidate order.
		{"order", shipped, defRules,
			edit(edit(edit(shipped, "NCCL_NET", set("NCCL_NET", "Socket")), "NCCL_DEBUG", set("NCCL_DEBUG", "INFO")), "NCCL_CROSS_NIC", set("NCCL_CROSS_NIC", "1")),
			[]brief{{"env NCCL_CROSS_NIC", EnforcedViolation, Fatal}, {"env NCCL_DEBUG", Changed, Note}, {"env NCCL_NET", Added, Fatal}}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(tc.shipped, tc.rules, tc.candidate)
			if d := cmp.Diff(tc.want, briefs(got), cmpopts.EquateEmpty()); d != "" {
				t.Fatalf("findings (-want +got):\n%s\nall: %v", d, got)
			}
			for _, f := range got {
				if f.Reason == "" || f.Fix == "" {
					t.Errorf("finding without reason or fix: %v", f)
				}
			}
			if len(got) > 0 && (!strings.Contains(got[0].Reason, tc.reason) || !strings.Contains(got[0].Fix, tc.fix)) {
				t.Errorf("first finding %v; want reason containing %q and fix containing %q", got[0], tc.reason, tc.fix)
			}
		})
	}
}

// An empty env loses every shipped variable, each judged by its class.
func TestCheckEmptyCandidate(t *testing.T) {
	rules := loadRules(t, "reconstruction/v1.0.15/a3plus_guest_config_simple.textproto")
	shipped := env(tcpxo.SimpleProfile())
	var want []brief
	for _, v := range shipped {
		b := brief{EnvPath(v.Name), Removed, Warning}
		switch Classify(v.Name, rules) {
		case ClassEnforced:
			b.Kind, b.Severity = EnforcedViolation, Fatal
		case ClassFabric:
			b.Severity = Fatal
		case ClassRecommended:
			b.Kind = RecommendedDifference
		case ClassLogging:
			b.Severity = Note
		}
		want = append(want, b)
	}
	if d := cmp.Diff(want, briefs(Check(shipped, rules, nil))); d != "" {
		t.Fatalf("findings (-want +got):\n%s", d)
	}
}

// Each profile passes its own reconstructed guest config, in both
// versions: the reconstruction is consistent with the profiles.
func TestProfilesPassTheirRules(t *testing.T) {
	for _, version := range []string{"v1.0.15", "v1.0.14"} {
		for file, profile := range map[string][]facts.EnvVar{
			"a3plus_guest_config.textproto":        tcpxo.DefaultProfile(),
			"a3plus_guest_config_simple.textproto": tcpxo.SimpleProfile(),
		} {
			rules := loadRules(t, filepath.Join("reconstruction", version, file))
			if got := Check(env(profile), rules, env(profile)); len(got) != 0 {
				t.Errorf("%s %s: the profile breaks its own rules: %v", version, file, got)
			}
		}
	}
}

// A guest config that contradicts the profile makes the profile itself a
// violation: the hostile variant the extraction must refuse.
func TestContradictingRules(t *testing.T) {
	rules := loadRules(t, "hostile/contradicts-profile.textproto")
	got := Check(env(tcpxo.DefaultProfile()), rules, env(tcpxo.DefaultProfile()))
	want := []brief{{"env NCCL_PROTO", EnforcedViolation, Fatal}}
	if d := cmp.Diff(want, briefs(got)); d != "" {
		t.Fatalf("findings (-want +got):\n%s", d)
	}
}

// Messages repeat at most a bounded excerpt of a user's value.
func TestCheckBoundsValues(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	shipped := runtimeEnv()
	longName := "NCCL_" + strings.ToUpper(long)
	got := Check(shipped, nil, append(edit(shipped, "NCCL_SOCKET_IFNAME", set("NCCL_SOCKET_IFNAME", long)),
		corev1.EnvVar{Name: longName, Value: long}, corev1.EnvVar{Name: "NCCL_FASTRAK_" + long, Value: long}))
	if len(got) != 3 {
		t.Fatalf("%d findings, want 3: %.300v", len(got), got)
	}
	for _, f := range got {
		if n := len(f.Reason) + len(f.Fix); n > 1000 {
			t.Errorf("%d bytes of reason and fix: %.200s", n, f.Reason)
		}
	}
	if got[1].Path != "env "+longName {
		t.Errorf("path %.100q does not keep the whole name", got[1].Path)
	}
}
