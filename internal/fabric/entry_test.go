package fabric

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
)

// TestEntryRulesAgreeWithCheck holds the single-entry form of the rule set
// to Check: for every rule, each value it names, their other casings, the
// shipped directory lists with directories added around them, values no rule
// names and a valueFrom, the verdict of the first matching rule is the
// finding Check gives the shipped env with that one entry upserted.
func TestEntryRulesAgreeWithCheck(t *testing.T) {
	for _, file := range []string{"reconstruction/v1.0.15/a3plus_guest_config.textproto", "reconstruction/v1.0.15/a3plus_guest_config_simple.textproto"} {
		rules := loadRules(t, file)
		shipped := runtimeEnv()
		entries := EntryRules(shipped, rules)
		names := []string{"NCCL_FASTRAK_NEW_KNOB", "NCCL_BRAND_NEW", "WANDB_PROJECT", "nccl_net", "NCCL_FASTRAK_"}
		for _, r := range entries {
			if r.Prefix == nil {
				names = append(names, r.Name)
			}
		}
		ship, _ := settings(shipped)
		for _, name := range names {
			values := []string{"", "x", "Socket", "none", "eth1", "LOC", "/usr/lib", probeValue}
			if s := ship[name]; s.set {
				values = append(values, s.value, s.value+":/opt/lib", "/opt/lib:"+s.value, strings.ToUpper(s.value), s.value+" ")
			}
			for _, r := range entries {
				if r.Name == name {
					for _, v := range r.Values {
						values = append(values, v.Value, strings.ToUpper(v.Value), strings.ToLower(v.Value))
					}
				}
			}
			if name == "NCCL_NET" {
				values = append(values, "fastrak", "FASTRAK", "Socket")
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
					want := Severity(0)
					for _, f := range Check(shipped, rules, edit(shipped, name, &e)) {
						if f.Path == EnvPath(name) {
							want = f.Severity
						}
					}
					got := r.Judge(v, fromElsewhere)
					if got.Severity != want {
						t.Errorf("%s: %s=%q (valueFrom %v): entry rule says %v, Check says %v", file, name, v, fromElsewhere, got.Severity, want)
					}
					if got.Severity != 0 && (got.Reason == "" || got.Fix == "" || got.Kind == "") {
						t.Errorf("%s=%q: incomplete verdict %+v", name, v, got)
					}
				}
			}
		}
	}
}

// The single-entry form names what the guide's pitfalls need: the fabric
// variables and enforced rules fatal but for the shipped value, NCCL_NET's
// FasTrak in any casing a warning, LD_LIBRARY_PATH a directory list, and the
// patterns last.
func TestEntryRulesShape(t *testing.T) {
	rules := loadRules(t, "reconstruction/v1.0.15/a3plus_guest_config.textproto")
	entries := EntryRules(runtimeEnv(), rules)
	byName := map[string]EntryRule{}
	for _, r := range entries {
		byName[r.Name] = r
	}
	if r := byName["NCCL_SOCKET_IFNAME"]; r.Other.Severity != Fatal || len(r.Values) != 1 || r.Values[0].Verdict.Severity != 0 || !strings.Contains(r.Other.Reason, `"`+ValueMark+`"`) {
		t.Errorf("NCCL_SOCKET_IFNAME: %+v", r)
	}
	if r := byName["NCCL_NET"]; len(r.Values) != 1 || !r.Values[0].Fold || r.Values[0].Verdict.Severity != Warning || r.Other.Severity != Fatal {
		t.Errorf("NCCL_NET: %+v", r)
	}
	if r := byName["LD_LIBRARY_PATH"]; r.Paths == nil || r.Paths.Ordered.Severity != Note || r.Paths.Anywhere.Severity != Warning {
		t.Errorf("LD_LIBRARY_PATH: %+v", r)
	}
	tail := entries[len(entries)-3:]
	for i, want := range []struct {
		prefix string
		sev    Severity
	}{{FasTrakPrefix, Fatal}, {ncclPrefix, Warning}, {"", 0}} {
		if tail[i].Prefix == nil || *tail[i].Prefix != want.prefix || tail[i].Other.Severity != want.sev {
			t.Errorf("pattern %d: %+v, want prefix %q severity %v", i, tail[i], want.prefix, want.sev)
		}
		if want.sev != 0 && !strings.Contains(tail[i].Other.Reason, NameMark) {
			t.Errorf("pattern %q names no entry: %q", want.prefix, tail[i].Other.Reason)
		}
	}
	for _, r := range rules {
		if e := byName[r.Name]; r.Policy == guestconfig.Enforced && e.Class != ClassEnforced {
			t.Errorf("%s: class %v", r.Name, e.Class)
		}
	}
}
