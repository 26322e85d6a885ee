package fabric

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// daemonCaps are the tcpxo-daemon's capabilities as the runtime ships them
// (Google's unprivileged sample).
var daemonCaps = []corev1.Capability{"NET_ADMIN", "NET_BIND_SERVICE"}

func caps(names ...string) []corev1.Capability {
	out := make([]corev1.Capability, len(names))
	for i, n := range names {
		out[i] = corev1.Capability(n)
	}
	return out
}

// Issue 38, item 1: a capability written CAP_NET_ADMIN is dropped by
// containerd. Written alone it loses the daemon's NET_ADMIN (fatal, naming
// the prefix as the cause and the name to write); next to NET_ADMIN it is an
// inert duplicate (a warning naming it); a prefixed name the container does
// not need is a warning; plain names, in any case, are no finding.
func TestCheckCapabilitiesPrefix(t *testing.T) {
	for _, tc := range []struct {
		name      string
		candidate []corev1.Capability
		want      map[string]Severity // path -> severity
		words     []string
	}{
		{"as shipped", daemonCaps, nil, nil},
		{"lower case", caps("net_admin", "NET_BIND_SERVICE"), nil, nil},
		{"prefixed", caps("CAP_NET_ADMIN", "NET_BIND_SERVICE"), map[string]Severity{"capability CAP_NET_ADMIN": Fatal},
			[]string{"CAP_NET_ADMIN carries the CAP_ prefix", "containerd drops a capability name written with the CAP_ prefix", "cluster-readiness-engine issue #438", "tcpxo-daemon lacks NET_ADMIN", "write NET_ADMIN"}},
		{"prefixed in lower case", caps("cap_net_admin", "NET_BIND_SERVICE"), map[string]Severity{"capability cap_net_admin": Fatal},
			[]string{"cap_net_admin carries the CAP_ prefix", "write NET_ADMIN"}},
		{"both prefixed", caps("CAP_NET_ADMIN", "CAP_NET_BIND_SERVICE"), map[string]Severity{"capability CAP_NET_ADMIN": Fatal, "capability CAP_NET_BIND_SERVICE": Fatal},
			[]string{"write NET_BIND_SERVICE"}},
		{"both spellings", caps("NET_ADMIN", "CAP_NET_ADMIN", "NET_BIND_SERVICE"), map[string]Severity{"capability CAP_NET_ADMIN": Warning},
			[]string{"the entry grants nothing", "an edit that drops NET_ADMIN and keeps CAP_NET_ADMIN loses it with no error", "remove CAP_NET_ADMIN"}},
		{"prefixed twice", caps("CAP_NET_ADMIN", "NET_BIND_SERVICE", "CAP_NET_ADMIN"), map[string]Severity{"capability CAP_NET_ADMIN": Fatal}, nil},
		{"both spellings, prefixed first", caps("CAP_NET_ADMIN", "net_admin", "NET_BIND_SERVICE"), map[string]Severity{"capability CAP_NET_ADMIN": Warning}, nil},
		{"a prefixed capability not needed", caps("NET_ADMIN", "NET_BIND_SERVICE", "CAP_SYS_PTRACE"), map[string]Severity{"capability CAP_SYS_PTRACE": Warning},
			[]string{"tcpxo-daemon lacks SYS_PTRACE; write SYS_PTRACE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckCapabilities("tcpxo-daemon", daemonCaps, tc.candidate)
			if len(got) != len(tc.want) {
				t.Fatalf("findings %v, want %v", got, tc.want)
			}
			text := ""
			for _, f := range got {
				if sev, ok := tc.want[f.Path]; !ok || f.Severity != sev || f.Kind != CapabilityPrefix || f.Reason == "" || f.Fix == "" {
					t.Errorf("finding %+v, want one of %v", f, tc.want)
				}
				text += f.Reason + "; fix: " + f.Fix + "\n"
			}
			for _, w := range tc.words {
				if !strings.Contains(text, w) {
					t.Errorf("findings lack %q:\n%s", w, text)
				}
			}
		})
	}
}

// A shipped list that itself carries the prefix still names what the
// container needs: bom-check judges the shipped runtime against itself.
func TestCheckCapabilitiesPrefixedShipped(t *testing.T) {
	shipped := caps("CAP_NET_ADMIN", "NET_BIND_SERVICE")
	got := CheckCapabilities("tcpxo-daemon", shipped, shipped)
	if len(got) != 1 || got[0].Severity != Fatal || !strings.Contains(got[0].Reason, "lacks NET_ADMIN") {
		t.Fatalf("CheckCapabilities of a prefixed shipped list = %v, want NET_ADMIN lost", got)
	}
}

// TestCapabilityRuleAgreesWithCheck holds the single-entry form to
// CheckCapabilities: for every entry of every list, the rule's verdict,
// marks filled, is the finding CheckCapabilities gives, words included.
func TestCapabilityRuleAgreesWithCheck(t *testing.T) {
	r := CapabilityRuleFor("tcpxo-daemon", daemonCaps)
	if len(r.Needed) != 2 || r.Lost.Severity != Fatal || r.Duplicate.Severity != Warning || r.Other.Severity != Warning {
		t.Fatalf("rule %+v", r)
	}
	for _, v := range []EntryVerdict{r.Lost, r.Duplicate, r.Other} {
		if !strings.Contains(v.Reason, NameMark) || !strings.Contains(v.Fix, PlainMark) || strings.Contains(v.Reason+v.Fix, probeCapability) {
			t.Errorf("verdict %+v: want the entry's name and plain name marked, no probe left", v)
		}
	}
	for _, list := range [][]string{
		{"NET_ADMIN", "NET_BIND_SERVICE"},
		{"CAP_NET_ADMIN", "NET_BIND_SERVICE"},
		{"cap_net_admin", "Cap_Net_Bind_Service"},
		{"NET_ADMIN", "CAP_NET_ADMIN", "NET_BIND_SERVICE"},
		{"CAP_NET_ADMIN", "net_admin"},
		{"CAP_SYS_PTRACE", "CAP_", "", "CAP_CAP_NET_ADMIN", "CAP_NET_ADMIN "},
		{"CAP_" + probeCapability, "CAP_IPC_LOCK", "IPC_LOCK"},
	} {
		found := map[string]Finding{}
		for _, f := range CheckCapabilities("tcpxo-daemon", daemonCaps, caps(list...)) {
			found[f.Path] = f
		}
		for _, e := range list {
			got := FillCapability(r.Judge(e, list), e)
			want := found[CapabilityPath(e)]
			if got.Severity != want.Severity || got.Kind != want.Kind || got.Reason != want.Reason || got.Fix != want.Fix {
				t.Errorf("%q in %q: rule says %+v, CheckCapabilities %+v", e, list, got, want)
			}
		}
	}
}
