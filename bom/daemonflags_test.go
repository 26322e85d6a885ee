package bom

import "testing"

// Only the pinned daemon's rules apply: a flag a later release retires is
// no finding against an earlier daemon, one retired for every pinned
// release always is, and a tag that does not read as vMAJOR.MINOR.PATCH
// applies them all (fail closed). The irregular published tags read by
// their numbers.
func TestRetiredDaemonFlagAppliesTo(t *testing.T) {
	for _, tc := range []struct {
		pinned, from string
		want         bool
	}{
		{"v1.0.21", "v1.0.21", true}, {"v1.0.23", "v1.0.21", true}, {"v1.0.20", "v1.0.21", false},
		{"v1.0.9", "v1.0.21", false}, {"v1.1.0", "v1.0.21", true}, {"v1.0.20", "", true}, {"latest", "v1.0.21", true},
		{"v1.0.09", "v1.0.21", false}, {"v1.0.13_1", "v1.0.21", false}, {"v1.0.6-sctp", "v1.0.21", false},
		{"v1.0.21-rc1", "v1.0.21", true}, {"v1.0.22", "v1.0.21", true},
		{"", "v1.0.21", true}, {"v1.0", "v1.0.21", true}, {"1.0.20", "v1.0.21", true}, {"v1.0.20", "latest", true},
	} {
		f := RetiredDaemonFlag{Flag: "--uid", From: tc.from}
		if got := f.AppliesTo(tc.pinned); got != tc.want {
			t.Errorf("from %q, AppliesTo(%q) = %v, want %v", tc.from, tc.pinned, got, tc.want)
		}
	}
}

// A flag is passed alone, with a value, or inside a shell command line; a
// longer flag that starts with its name is another flag.
func TestRetiredDaemonFlagIn(t *testing.T) {
	f := RetiredDaemonFlag{Flag: "--uid"}
	for arg, want := range map[string]bool{
		"--uid": true, "--uid=1000": true, "/fts/entrypoint_rxdm_container.sh --num_hops=2 --uid=0": true,
		"--uids": false, "--num_hops=2": false, "-uid": false, "": false,
	} {
		if got := f.In(arg); got != want {
			t.Errorf("In(%q) = %v, want %v", arg, got, want)
		}
	}
}
