package bomcheck

import (
	"context"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/runtimes"
)

// Issue 38, item 1: a capability of the shipped runtime written with the
// CAP_ prefix, which containerd drops, fails the keeps-the-fabric check
// with the prefix named as the cause, the name to write and the builder
// that writes it; a duplicate of a plain name fails too (the shipped
// runtime carries no inert entry).
func TestShippedCapabilitiesCarryNoPrefix(t *testing.T) {
	const netAdmin = "                      - NET_ADMIN\n"
	for _, tc := range []struct {
		name, new string
		want      []string // nil: the check passes
	}{
		{"as shipped", netAdmin, nil},
		{"prefixed", "                      - CAP_NET_ADMIN\n", []string{
			"container tcpxo-daemon: fatal: capability CAP_NET_ADMIN capability-prefix: CAP_NET_ADMIN carries the CAP_ prefix",
			"containerd drops a capability name written with the CAP_ prefix", "NVIDIA cluster-readiness-engine issue #438",
			"tcpxo-daemon lacks NET_ADMIN", "fix: write NET_ADMIN", "without the CAP_ prefix in runtimes/wiring.go", runtimes.GoldenRuntime,
		}},
		{"both spellings", netAdmin + "                      - CAP_NET_ADMIN\n", []string{
			"container tcpxo-daemon: warning: capability CAP_NET_ADMIN", "fix: remove CAP_NET_ADMIN and keep NET_ADMIN", "runtimes/wiring.go",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := copyRepo(t)
			edit(t, root, runtimes.GoldenRuntime, netAdmin, tc.new)
			r := checkKeepsFabric(context.Background(), Load(root, Options{}))
			text := r.Message + " " + strings.Join(r.Files, " ") + " " + r.Fix
			if (r.Status == Fail) != (tc.want != nil) {
				t.Fatalf("status %v: %s", r.Status, text)
			}
			if tc.want == nil && !strings.Contains(r.Message, "shipped capabilities carry no CAP_ prefix") {
				t.Errorf("pass message %q does not count the capabilities", r.Message)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("%q lacks %q", text, w)
				}
			}
		})
	}
}
