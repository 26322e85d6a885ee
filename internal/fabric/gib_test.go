package fabric

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/generated/tcpxo"
	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
	"github.com/tcpxogen/tcpxogen/internal/reconstruction"
)

// gibInstaller is the reconstructed NCCL/gIB installer (our belief of its
// layout and files: its README says so).
var gibInstaller = filepath.Join("..", "..", "testdata", "gib-installer", "v1.1.2")

func gibFile(t *testing.T, name string) (string, []byte) {
	t.Helper()
	p, err := reconstruction.LayerFile(gibInstaller, name)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, data
}

// gibRules are the reconstructed installer's config checker rules.
func gibRules(t *testing.T) []guestconfig.Rule {
	t.Helper()
	p, data := gibFile(t, "opt/gib/configs/guest_config.txtpb")
	rules, err := guestconfig.Parse(p, data)
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

var exportLine = regexp.MustCompile(`(?m)^export ([A-Z_0-9]+)=(\S+)$`)

// gibScriptEnv is what the reconstructed set_nccl_env.sh exports on an A3
// Ultra, in order: its export lines, with A3 Ultra's tuner file.
func gibScriptEnv(t *testing.T) []corev1.EnvVar {
	t.Helper()
	_, data := gibFile(t, "opt/gib/scripts/set_nccl_env.sh")
	var out []corev1.EnvVar
	for _, m := range exportLine.FindAllStringSubmatch(string(data), -1) {
		out = append(out, corev1.EnvVar{Name: m[1], Value: strings.ReplaceAll(m[2], "${tuner_config}", "tuner_config_a3u.txtpb")})
	}
	if len(out) != 14 || out[0] != (corev1.EnvVar{Name: "NCCL_NET", Value: "gIB"}) {
		t.Fatalf("set_nccl_env.sh exports %v, want its 14 variables, NCCL_NET=gIB first", out)
	}
	return out
}

const gibLibDir = "/usr/local/nvidia/lib64"

// gibShipped is the worker env a gIB runtime ships: the script's, plus the
// LD_LIBRARY_PATH of Google's manifests.
func gibShipped(t *testing.T) []corev1.EnvVar {
	return append(gibScriptEnv(t), corev1.EnvVar{Name: "LD_LIBRARY_PATH", Value: gibLibDir})
}

// The shipped gIB env keeps its own checker's rules, and differs from the
// script's env only by the library path Google's manifests add (a Note).
func TestGIBShippedEnvKeepsTheFabric(t *testing.T) {
	rules, shipped := gibRules(t), gibShipped(t)
	if got := GIBRules.Check(shipped, rules, shipped); len(got) != 0 {
		t.Errorf("shipped vs itself: %v", got)
	}
	want := []brief{{"env LD_LIBRARY_PATH", Added, Note}}
	if d := cmp.Diff(want, briefs(GIBRules.Check(gibScriptEnv(t), rules, shipped))); d != "" {
		t.Errorf("script env vs shipped (-want +got):\n%s", d)
	}
}

// The gIB rule set through the real Check, with the reconstructed checker's
// rules and without any (a checker config that does not list a variable
// leaves it to the fabric rules).
func TestGIBCheck(t *testing.T) {
	rules, shipped := gibRules(t), gibShipped(t)
	noNet := edit(shipped, "NCCL_NET", nil)
	cmRef := &corev1.EnvVar{Name: "NCCL_IB_TC", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "nccl"}, Key: "tc"}}}
	enforcedTC := []guestconfig.Rule{{Name: "NCCL_IB_TC", Value: "52", Policy: guestconfig.Enforced}}
	for _, tc := range []struct {
		name      string
		shipped   []corev1.EnvVar
		rules     []guestconfig.Rule
		candidate []corev1.EnvVar
		want      []brief
		reason    []string // substrings of the first finding's Reason
		fix       string   // substring of its Fix
	}{
		{"unchanged", shipped, rules, shipped, nil, nil, ""},
		{"unrelated addition", shipped, rules, edit(shipped, "MY_APP_FLAG", set("MY_APP_FLAG", "1")), nil, nil, ""},
		// NCCL_NET: gIB or nothing.
		{"NCCL_NET=Socket", shipped, rules, edit(shipped, "NCCL_NET", set("NCCL_NET", "Socket")),
			[]brief{{"env NCCL_NET", EnforcedViolation, Fatal}},
			[]string{`enforces NCCL_NET="gIB" and here it is "Socket"`, "the config checker terminates the job"}, `set NCCL_NET="gIB"`},
		{"NCCL_NET=Socket, no checker rule", shipped, nil, edit(shipped, "NCCL_NET", set("NCCL_NET", "Socket")),
			[]brief{{"env NCCL_NET", Changed, Fatal}},
			[]string{`NCCL_NET is "Socket" where tcpxogen ships "gIB"`, "takes NCCL off the gIB plugin"}, `restore NCCL_NET="gIB"`},
		{"NCCL_NET=IB", shipped, rules, edit(shipped, "NCCL_NET", set("NCCL_NET", "IB")),
			[]brief{{"env NCCL_NET", EnforcedViolation, Fatal}}, []string{`"IB"`}, ""},
		{"NCCL_NET=IB, no checker rule", shipped, nil, edit(shipped, "NCCL_NET", set("NCCL_NET", "IB")),
			[]brief{{"env NCCL_NET", Changed, Fatal}}, []string{"NCCL's own IB or Socket"}, ""},
		{"NCCL_NET removed", shipped, rules, noNet,
			[]brief{{"env NCCL_NET", EnforcedViolation, Fatal}}, []string{"and here it is unset"}, ""},
		{"NCCL_NET removed, no checker rule", shipped, nil, noNet,
			[]brief{{"env NCCL_NET", Removed, Fatal}}, []string{`NCCL_NET is removed (shipped "gIB")`}, `keep NCCL_NET="gIB"`},
		// TCPXO's FasTrak verdicts are TCPXO's.
		{"NCCL_NET=FasTrak", shipped, rules, edit(shipped, "NCCL_NET", set("NCCL_NET", "FasTrak")),
			[]brief{{"env NCCL_NET", EnforcedViolation, Fatal}}, nil, ""},
		{"NCCL_NET=FasTrak, no checker rule", shipped, nil, edit(shipped, "NCCL_NET", set("NCCL_NET", "FasTrak")),
			[]brief{{"env NCCL_NET", Changed, Fatal}}, nil, ""},
		{"NCCL_NET=FasTrak added to an env without it", noNet, nil, edit(noNet, "NCCL_NET", set("NCCL_NET", "FasTrak")),
			[]brief{{"env NCCL_NET", Added, Fatal}}, []string{`NCCL_NET is added as "FasTrak"`}, "remove NCCL_NET"},
		{"NCCL_NET=gIB added to an env without it", noNet, nil, shipped, []brief{{"env NCCL_NET", Added, Note}}, []string{"names the gIB network"}, "none needed"},
		// NCCL matches the name in any casing; the checker's rule, exactly.
		{"NCCL_NET=GIB, no checker rule", shipped, nil, edit(shipped, "NCCL_NET", set("NCCL_NET", "GIB")),
			[]brief{{"env NCCL_NET", Changed, Note}}, []string{`NCCL_NET="GIB" names the gIB network`}, ""},
		{"NCCL_NET=gib against the checker's rule", shipped, rules, edit(shipped, "NCCL_NET", set("NCCL_NET", "gib")),
			[]brief{{"env NCCL_NET", EnforcedViolation, Fatal}}, nil, ""},
		// Enforced checker rules.
		{"enforced traffic class changed", shipped, enforcedTC, edit(shipped, "NCCL_IB_TC", set("NCCL_IB_TC", "41")),
			[]brief{{"env NCCL_IB_TC", EnforcedViolation, Fatal}},
			[]string{`enforces NCCL_IB_TC="52" and here it is "41": the config checker terminates the job at NCCL init`}, `set NCCL_IB_TC="52"`},
		{"enforced traffic class changed, the installer's rules", shipped, rules, edit(shipped, "NCCL_IB_TC", set("NCCL_IB_TC", "41")),
			[]brief{{"env NCCL_IB_TC", EnforcedViolation, Fatal}}, []string{`NCCL_IB_TC="52"`, `"41"`}, ""},
		{"enforced from a ConfigMap", shipped, rules, edit(shipped, "NCCL_IB_TC", cmRef),
			[]brief{{"env NCCL_IB_TC", EnforcedViolation, Fatal}}, []string{`set from ConfigMap "nccl" key "tc"`}, ""},
		// The RoCE settings are fabric even where no checker rule names them.
		{"traffic class, no checker rule", shipped, nil, edit(shipped, "NCCL_IB_TC", set("NCCL_IB_TC", "41")),
			[]brief{{"env NCCL_IB_TC", Changed, Fatal}}, []string{"lossless queue"}, `restore NCCL_IB_TC="52"`},
		{"FIFO traffic class, no checker rule", shipped, nil, edit(shipped, "NCCL_IB_FIFO_TC", set("NCCL_IB_FIFO_TC", "0")),
			[]brief{{"env NCCL_IB_FIFO_TC", Changed, Fatal}}, []string{"control messages"}, ""},
		{"GID index, no checker rule", shipped, nil, edit(shipped, "NCCL_IB_GID_INDEX", set("NCCL_IB_GID_INDEX", "0")),
			[]brief{{"env NCCL_IB_GID_INDEX", Changed, Fatal}}, []string{"RoCE v2"}, ""},
		{"cross NIC, no checker rule", shipped, nil, edit(shipped, "NCCL_CROSS_NIC", set("NCCL_CROSS_NIC", "1")),
			[]brief{{"env NCCL_CROSS_NIC", Changed, Fatal}}, []string{"rail"}, ""},
		{"RDMA devices selected", shipped, rules, edit(shipped, "NCCL_IB_HCA", set("NCCL_IB_HCA", "mlx5_0")),
			[]brief{{"env NCCL_IB_HCA", Added, Fatal}}, []string{"loses the RDMA NICs it leaves out"}, "remove NCCL_IB_HCA"},
		{"another IB setting", shipped, rules, edit(shipped, "NCCL_IB_TIMEOUT", set("NCCL_IB_TIMEOUT", "22")),
			[]brief{{"env NCCL_IB_TIMEOUT", Added, Fatal}}, []string{"NCCL_IB_* settings configure the IB verbs transport"}, ""},
		// The plugin and its libraries.
		{"NCCL_NET_PLUGIN=none", shipped, rules, edit(shipped, "NCCL_NET_PLUGIN", set("NCCL_NET_PLUGIN", "none")),
			[]brief{{"env NCCL_NET_PLUGIN", Added, Fatal}}, []string{"drops the gIB plugin"}, ""},
		{"GPUDirect RDMA off", shipped, rules, edit(shipped, "NCCL_NET_GDR_LEVEL", set("NCCL_NET_GDR_LEVEL", "LOC")),
			[]brief{{"env NCCL_NET_GDR_LEVEL", Changed, Fatal}}, []string{"LOC turns GPUDirect RDMA off"}, `restore NCCL_NET_GDR_LEVEL="PIX"`},
		{"tuner config of the other machine", shipped, rules,
			edit(shipped, "NCCL_TUNER_CONFIG_PATH", set("NCCL_TUNER_CONFIG_PATH", "/usr/local/gib/configs/tuner_config_a4.txtpb")),
			[]brief{{"env NCCL_TUNER_CONFIG_PATH", Changed, Fatal}}, []string{"config for this machine type"}, ""},
		{"checker config elsewhere", shipped, rules, edit(shipped, "NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE", set("NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE", "/tmp/x")),
			[]brief{{"env NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE", Changed, Fatal}}, nil, ""},
		// Library path: the same judgement as TCPXO's, in gIB's words.
		{"library path appended", shipped, rules, edit(shipped, "LD_LIBRARY_PATH", set("LD_LIBRARY_PATH", gibLibDir+":/opt/app/lib")),
			[]brief{{"env LD_LIBRARY_PATH", Changed, Note}}, []string{"keeps the installer's directories first"}, ""},
		{"library path prepended", shipped, rules, edit(shipped, "LD_LIBRARY_PATH", set("LD_LIBRARY_PATH", "/opt/nccl/lib:"+gibLibDir)),
			[]brief{{"env LD_LIBRARY_PATH", Changed, Warning}}, []string{"shadows the installer's (Google's manifests set the installer's directory alone)"}, ""},
		{"library path replaced", shipped, rules, edit(shipped, "LD_LIBRARY_PATH", set("LD_LIBRARY_PATH", "/opt/app/lib")),
			[]brief{{"env LD_LIBRARY_PATH", Changed, Fatal}}, []string{"loads no gIB plugin"}, `restore LD_LIBRARY_PATH="/usr/local/nvidia/lib64"`},
		{"library path removed", shipped, rules, edit(shipped, "LD_LIBRARY_PATH", nil),
			[]brief{{"env LD_LIBRARY_PATH", Removed, Fatal}}, nil, ""},
		{"library path added with another value", gibScriptEnv(t), nil, edit(shipped, "LD_LIBRARY_PATH", set("LD_LIBRARY_PATH", "/opt/lib")),
			[]brief{{"env LD_LIBRARY_PATH", Added, Fatal}}, nil, `set LD_LIBRARY_PATH="/usr/local/nvidia/lib64", or remove it`},
		// Tuning keeps the fabric.
		{"logging", shipped, rules, edit(shipped, "NCCL_DEBUG", set("NCCL_DEBUG", "INFO")),
			[]brief{{"env NCCL_DEBUG", Added, Note}}, []string{"logging only"}, "none needed"},
		{"buffer size", shipped, rules, edit(shipped, "NCCL_BUFFSIZE", set("NCCL_BUFFSIZE", "8388608")),
			[]brief{{"env NCCL_BUFFSIZE", Added, Warning}},
			[]string{"the checker may report it as unexpected", "A3 Ultra and A4 were not qualified with it"}, "tcpxogen validate --fabric gib"},
		{"recommended chunk size", shipped, rules, edit(shipped, "NCCL_P2P_NET_CHUNKSIZE", set("NCCL_P2P_NET_CHUNKSIZE", "524288")),
			[]brief{{"env NCCL_P2P_NET_CHUNKSIZE", RecommendedDifference, Warning}}, []string{`recommends NCCL_P2P_NET_CHUNKSIZE="131072"`}, ""},
		// Queue pairs and adaptive routing tune the transport: the
		// checker's recommendation judges them, not the prefix.
		{"queue pairs", shipped, rules, edit(shipped, "NCCL_IB_QPS_PER_CONNECTION", set("NCCL_IB_QPS_PER_CONNECTION", "8")),
			[]brief{{"env NCCL_IB_QPS_PER_CONNECTION", RecommendedDifference, Warning}}, nil, ""},
		{"adaptive routing, no checker rule", shipped, nil, edit(shipped, "NCCL_IB_ADAPTIVE_ROUTING", set("NCCL_IB_ADAPTIVE_ROUTING", "0")),
			[]brief{{"env NCCL_IB_ADAPTIVE_ROUTING", Changed, Warning}}, []string{"A3 Ultra and A4 were qualified with the shipped value"}, ""},
		// What is TCPXO's fabric is not gIB's.
		{"socket interface", shipped, rules, edit(shipped, "NCCL_SOCKET_IFNAME", set("NCCL_SOCKET_IFNAME", "eth1")),
			[]brief{{"env NCCL_SOCKET_IFNAME", Added, Warning}}, nil, ""},
		{"TCPXO's LLCM directory", shipped, rules,
			edit(shipped, "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", set("NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", "/dev/aperture_devices")),
			[]brief{{"env NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", Added, Warning}}, nil, ""},
		{"TCPXO's profile input", shipped, rules, edit(shipped, "NCCL_LIB_DIR", set("NCCL_LIB_DIR", gibLibDir)),
			[]brief{{"env NCCL_LIB_DIR", Added, Warning}}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := GIBRules.Check(tc.shipped, tc.rules, tc.candidate)
			if d := cmp.Diff(tc.want, briefs(got), cmpopts.EquateEmpty()); d != "" {
				t.Fatalf("findings (-want +got):\n%s\nall: %v", d, got)
			}
			for _, f := range got {
				if f.Reason == "" || f.Fix == "" {
					t.Errorf("finding without reason or fix: %v", f)
				}
			}
			if len(got) == 0 {
				return
			}
			for _, r := range tc.reason {
				if !strings.Contains(got[0].Reason, r) {
					t.Errorf("reason %q does not contain %q", got[0].Reason, r)
				}
			}
			if !strings.Contains(got[0].Fix, tc.fix) {
				t.Errorf("fix %q does not contain %q", got[0].Fix, tc.fix)
			}
		})
	}
}

// A TrainJob that only tunes (logging, buffers) keeps the fabric, and one
// that sets NCCL_NET to anything but gIB does not, whichever rule set the
// checker config gives; TCPXO's verdict on adding FasTrak, a Warning, is
// a Fatal under gIB.
func TestGIBFabricVerdicts(t *testing.T) {
	shipped := gibShipped(t)
	worst := func(fs []Finding) Severity {
		var s Severity
		for _, f := range fs {
			s = max(s, f.Severity)
		}
		return s
	}
	for _, rules := range [][]guestconfig.Rule{gibRules(t), nil} {
		tuned := edit(edit(shipped, "NCCL_DEBUG", set("NCCL_DEBUG", "INFO")), "NCCL_BUFFSIZE", set("NCCL_BUFFSIZE", "8388608"))
		if got := worst(GIBRules.Check(shipped, rules, tuned)); got == Fatal {
			t.Errorf("tuning loses the fabric: %v", GIBRules.Check(shipped, rules, tuned))
		}
		for _, v := range []string{"Socket", "IB", "FasTrak", "fastrak", "none", ""} {
			if got := worst(GIBRules.Check(shipped, rules, edit(shipped, "NCCL_NET", set("NCCL_NET", v)))); got != Fatal {
				t.Errorf("NCCL_NET=%q with %d rules: %v, want fatal", v, len(rules), got)
			}
		}
	}
	without := edit(shipped, "NCCL_NET", nil)
	added := edit(without, "NCCL_NET", set("NCCL_NET", "FasTrak"))
	if got := worst(TCPXORules.Check(without, nil, added)); got != Warning {
		t.Errorf("TCPXO, NCCL_NET=FasTrak added: %v, want warning", got)
	}
	if got := worst(GIBRules.Check(without, nil, added)); got != Fatal {
		t.Errorf("gIB, NCCL_NET=FasTrak added: %v, want fatal", got)
	}
}

func TestGIBClassify(t *testing.T) {
	rules := gibRules(t)
	for name, want := range map[string]Class{
		"NCCL_NET":                   ClassEnforced, // the checker's rule wins over the fabric variable
		"NCCL_IB_TC":                 ClassEnforced,
		"NCCL_IB_GID_INDEX":          ClassEnforced,
		"NCCL_NET_GDR_LEVEL":         ClassFabric, // the fabric variable wins over a recommendation
		"NCCL_NET_PLUGIN":            ClassFabric,
		"LD_LIBRARY_PATH":            ClassFabric,
		"NCCL_TUNER_CONFIG_PATH":     ClassFabric,
		"NCCL_IB_HCA":                ClassFabric,
		"NCCL_IB_TIMEOUT":            ClassFabric, // the plugin prefix
		"NCCL_IB_DISABLE":            ClassFabric,
		"NCCL_IB_QPS_PER_CONNECTION": ClassRecommended, // tuning inside the prefix
		"NCCL_IB_ADAPTIVE_ROUTING":   ClassRecommended,
		"NCCL_P2P_NET_CHUNKSIZE":     ClassRecommended,
		"NCCL_DEBUG":                 ClassLogging,
		"NCCL_BUFFSIZE":              ClassTuning,
		"NCCL_SOCKET_IFNAME":         ClassTuning, // TCPXO's fabric, not gIB's
		"NCCL_FASTRAK_IFNAME":        ClassTuning,
		"NCCL_LIB_DIR":               ClassTuning,
		"CUDA_VISIBLE_DEVICES":       ClassTuning,
		"PATH":                       ClassOther,
	} {
		if got := GIBRules.Classify(name, rules); got != want {
			t.Errorf("Classify(%s) = %v, want %v", name, got, want)
		}
	}
	// Without the checker's rules, what it enforces is still fabric, and
	// the prefix's tuning is tuning.
	for name, want := range map[string]Class{
		"NCCL_NET": ClassFabric, "NCCL_IB_TC": ClassFabric, "NCCL_IB_FIFO_TC": ClassFabric, "NCCL_IB_GID_INDEX": ClassFabric,
		"NCCL_CROSS_NIC": ClassFabric, "NCCL_IB_QPS_PER_CONNECTION": ClassTuning,
	} {
		if got := GIBRules.Classify(name, nil); got != want {
			t.Errorf("Classify(%s) without rules = %v, want %v", name, got, want)
		}
	}
}

// The gIB table: the shipped variables, the named ones nobody ships, then
// the patterns, the plugin prefix's first; nothing in it, nor in the class
// docs, is TCPXO's.
func TestGIBTable(t *testing.T) {
	rules, shipped := gibRules(t), gibShipped(t)
	rows := GIBRules.Table(shipped, rules)
	var names []string
	for i, r := range rows {
		names = append(names, r.Name)
		if r.Why == "" {
			t.Errorf("row %+v lacks a reason", r)
		}
		if i < len(shipped) && (r.Name != shipped[i].Name || r.Value != shipped[i].Value || r.Class != GIBRules.Classify(r.Name, rules)) {
			t.Errorf("row %d = %+v, want shipped %s=%s", i, r, shipped[i].Name, shipped[i].Value)
		}
	}
	wantTail := []string{"NCCL_IB_HCA", "NCCL_NET_PLUGIN", "NCCL_DEBUG", "NCCL_DEBUG_FILE", "NCCL_DEBUG_SUBSYS",
		"NCCL_DEBUG_TIMESTAMP_FORMAT", "NCCL_DEBUG_TIMESTAMP_LEVELS", "other NCCL_IB_* variables", PatternNCCL, PatternOther}
	if d := cmp.Diff(wantTail, names[len(shipped):]); d != "" {
		t.Errorf("rows after the shipped ones (-want +got):\n%s", d)
	}
	if r := rows[len(rows)-3]; r.Class != ClassFabric || r.Name != PatternPlugin(GIBRules.PluginPrefix()) {
		t.Errorf("plugin pattern row %+v", r)
	}
	texts := []string{}
	for _, r := range rows {
		texts = append(texts, r.Why)
	}
	for _, c := range Classes {
		texts = append(texts, GIBRules.ClassDoc(c))
		if GIBRules.ClassDoc(c) == "" {
			t.Errorf("class %v has no gIB doc", c)
		}
	}
	for _, f := range GIBRules.Check(shipped, nil, nil) {
		texts = append(texts, f.Reason, f.Fix)
	}
	for _, s := range texts {
		for _, tcpxo := range []string{"FasTrak", "FASTRAK", "A3 Mega", "aperture", "nccl-env-profile", "GPUDirect-TCPXO"} {
			if strings.Contains(s, tcpxo) {
				t.Errorf("gIB text names TCPXO's %s: %q", tcpxo, s)
			}
		}
	}
}

// The single-entry form of the gIB rule set agrees with its Check, with the
// checker's rules and without them (where NCCL_NET=gIB in another casing is
// a Note while gIB itself is no finding).
func TestGIBEntryRulesAgreeWithCheck(t *testing.T) {
	shipped := gibShipped(t)
	for _, rules := range [][]guestconfig.Rule{gibRules(t), nil} {
		entryRulesAgree(t, GIBRules, shipped, rules,
			[]string{"NCCL_IB_NEW_KNOB", "NCCL_IB_", "NCCL_BRAND_NEW", "NCCL_FASTRAK_IFNAME", "NCCL_SOCKET_IFNAME", "WANDB_PROJECT", "nccl_net"},
			[]string{"gib", "GIB", "Gib", "IB", "FasTrak", "41", "52", "3", "mlx5_0"})
	}
	// An env that ships neither of the prefix's tuning variables: they
	// still get their own rule, ahead of the prefix's pattern.
	entryRulesAgree(t, GIBRules, []corev1.EnvVar{{Name: "NCCL_NET", Value: "gIB"}}, nil,
		[]string{"NCCL_IB_QPS_PER_CONNECTION", "NCCL_IB_ADAPTIVE_ROUTING", "NCCL_IB_TIMEOUT"}, []string{"8", "0"})
	r := GIBRules.EntryRules(shipped, nil)
	i := slices.IndexFunc(r, func(e EntryRule) bool { return e.Matches("NCCL_NET") })
	if v := r[i].Judge("GIB", false); v.Severity != Note || !strings.Contains(v.Reason, ValueMark) {
		t.Errorf("NCCL_NET=GIB without rules: %+v", v)
	}
	if v := r[i].Judge("gIB", false); v.Severity != 0 {
		t.Errorf("NCCL_NET=gIB without rules: %+v", v)
	}
	if p := r[len(r)-3].Prefix; p == nil || *p != "NCCL_IB_" {
		t.Errorf("the first pattern is %v, want NCCL_IB_", p)
	}
}

// TCPXO's single-entry form agrees with its Check on the envs with and
// without NCCL_NET: the casing rule changes nothing there.
func TestTCPXOEntryRulesAgreeWithCheck(t *testing.T) {
	rules := loadRules(t, "reconstruction/v1.0.15/a3plus_guest_config.textproto")
	withNet := append(runtimeEnv(), corev1.EnvVar{Name: "NCCL_NET", Value: "FasTrak"})
	for _, shipped := range [][]corev1.EnvVar{runtimeEnv(), withNet} {
		for _, rs := range [][]guestconfig.Rule{rules, nil} {
			entryRulesAgree(t, TCPXORules, shipped, rs, []string{"NCCL_FASTRAK_NEW_KNOB", "NCCL_IB_HCA", "nccl_net"}, []string{"fastrak", "FASTRAK", "gIB"})
		}
	}
}

// entryRulesAgree holds rs.EntryRules to rs.Check: for every named rule and
// the extra names, each value the rules name in its casings, the shipped
// value with directories around it, the extra values and a valueFrom, the
// first matching rule's verdict is the finding Check gives the shipped env
// with that one entry upserted.
func entryRulesAgree(t *testing.T, rs *RuleSet, shipped []corev1.EnvVar, rules []guestconfig.Rule, extraNames, extraValues []string) {
	t.Helper()
	entries := rs.EntryRules(shipped, rules)
	names := slices.Clone(extraNames)
	for _, r := range entries {
		if r.Prefix == nil {
			names = append(names, r.Name)
		}
	}
	ship, _ := settings(shipped)
	for _, name := range names {
		values := append([]string{"", "x", "Socket", "none", "eth1", "LOC", "/usr/lib", probeValue}, extraValues...)
		if s := ship[name]; s.set {
			values = append(values, s.value, s.value+":/opt/lib", "/opt/lib:"+s.value, strings.ToUpper(s.value), strings.ToLower(s.value))
		}
		for _, r := range entries {
			if r.Name == name {
				for _, v := range r.Values {
					values = append(values, v.Value, strings.ToUpper(v.Value), strings.ToLower(v.Value))
				}
			}
		}
		i := slices.IndexFunc(entries, func(r EntryRule) bool { return r.Matches(name) })
		if i < 0 {
			t.Fatalf("no entry rule matches %q", name)
		}
		r := entries[i]
		for _, fromElsewhere := range []bool{false, true} {
			for _, v := range values {
				e := corev1.EnvVar{Name: name, Value: v}
				if fromElsewhere {
					e = corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "k"}}}
				}
				var want Finding
				for _, f := range rs.Check(shipped, rules, edit(shipped, name, &e)) {
					if f.Path == EnvPath(name) {
						want = f
					}
				}
				got := r.Judge(v, fromElsewhere)
				if got.Severity != want.Severity || (got.Severity != 0 && got.Kind != want.Kind) {
					t.Errorf("%d rules: %s=%q (valueFrom %v): entry rule says %v %s, Check says %v %s",
						len(rules), name, v, fromElsewhere, got.Severity, got.Kind, want.Severity, want.Kind)
				}
				if got.Severity != 0 && (got.Reason == "" || got.Fix == "") {
					t.Errorf("%s=%q: incomplete verdict %+v", name, v, got)
				}
			}
		}
	}
}

// Every package-level function is TCPXORules' method, on the existing
// fixtures; and the registry gives each fabric its rule set.
func TestWrappersApplyTCPXORules(t *testing.T) {
	simple := append(env(tcpxo.SimpleProfile()), corev1.EnvVar{Name: "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", Value: "/dev/aperture_devices"})
	envs := map[string][]corev1.EnvVar{"runtime": runtimeEnv(), "simple": simple, "none": nil}
	ruleFiles := map[string][]guestconfig.Rule{
		"default": loadRules(t, "reconstruction/v1.0.15/a3plus_guest_config.textproto"),
		"simple":  loadRules(t, "reconstruction/v1.0.15/a3plus_guest_config_simple.textproto"),
		"hostile": loadRules(t, "hostile/contradicts-profile.textproto"),
		"none":    nil,
	}
	candidates := func(shipped []corev1.EnvVar) [][]corev1.EnvVar {
		return [][]corev1.EnvVar{
			shipped, nil,
			edit(shipped, "NCCL_NET", set("NCCL_NET", "fastrak")),
			edit(shipped, "NCCL_SOCKET_IFNAME", set("NCCL_SOCKET_IFNAME", "eth1")),
			edit(shipped, "LD_LIBRARY_PATH", set("LD_LIBRARY_PATH", "/opt:/usr/local/nvidia/lib64")),
			edit(shipped, "NCCL_LIB_DIR", set("NCCL_LIB_DIR", "/usr/local/nvidia/lib64")),
			edit(shipped, "NCCL_DEBUG", set("NCCL_DEBUG", "INFO")),
			edit(shipped, "NCCL_ALGO", set("NCCL_ALGO", "Ring")),
		}
	}
	for en, shipped := range envs {
		for rn, rules := range ruleFiles {
			if d := cmp.Diff(TCPXORules.Table(shipped, rules), Table(shipped, rules)); d != "" {
				t.Errorf("%s/%s: Table differs from TCPXORules.Table:\n%s", en, rn, d)
			}
			if d := cmp.Diff(TCPXORules.EntryRules(shipped, rules), EntryRules(shipped, rules)); d != "" {
				t.Errorf("%s/%s: EntryRules differs from TCPXORules.EntryRules:\n%s", en, rn, d)
			}
			for _, c := range candidates(shipped) {
				if d := cmp.Diff(TCPXORules.Check(shipped, rules, c), Check(shipped, rules, c)); d != "" {
					t.Errorf("%s/%s: Check differs from TCPXORules.Check:\n%s", en, rn, d)
				}
			}
			for _, e := range Table(shipped, rules) {
				if got, want := Classify(e.Name, rules), TCPXORules.Classify(e.Name, rules); got != want {
					t.Errorf("%s/%s: Classify(%s) = %v, TCPXORules.Classify %v", en, rn, e.Name, got, want)
				}
			}
		}
	}
	for _, c := range Classes {
		if c.Doc() != TCPXORules.ClassDoc(c) {
			t.Errorf("%v.Doc() is not TCPXORules.ClassDoc", c)
		}
	}
	if TCPXORules.PluginPrefix() != FasTrakPrefix || PatternPlugin(FasTrakPrefix) != PatternFasTrak || TCPXORules.Net() != "FasTrak" || GIBRules.Net() != "gIB" {
		t.Errorf("TCPXO's prefix %q, pattern %q, nets %q %q", TCPXORules.PluginPrefix(), PatternPlugin(FasTrakPrefix), TCPXORules.Net(), GIBRules.Net())
	}
	for name, want := range map[string]*RuleSet{"tcpxo": TCPXORules, "gib": GIBRules} {
		f, err := Lookup(name)
		if err != nil || f.Rules() != want {
			t.Errorf("Lookup(%s).Rules() = %p, %v; want %p", name, f.Rules(), err, want)
		}
	}
	for _, f := range Fabrics() {
		if f.Rules() == nil {
			t.Errorf("fabric %s has no rule set", f.Name)
		}
	}
}
