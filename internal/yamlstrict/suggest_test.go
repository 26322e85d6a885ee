package yamlstrict

import (
	"strings"
	"testing"
)

func TestClosest(t *testing.T) {
	fields := []string{"interfaceName", "network"}
	for _, tc := range []struct {
		name       string
		candidates []string
		want       string
	}{
		{"Network", fields, "network"},                       // another case
		{"NETWORK", fields, "network"},                       // another case
		{"netwrok", fields, "network"},                       // two edits
		{"netwo", fields, "network"},                         // a prefix
		{"interface", fields, "interfaceName"},               // a prefix, though four edits away
		{"interfaceNames", fields, "interfaceName"},          // the candidate is a prefix of the name
		{"ne", fields, ""},                                   // a prefix, but too short to mean much
		{"nxtwxrx", fields, ""},                              // three edits
		{"", fields, ""},                                     // nothing typed
		{"network", nil, ""},                                 // nothing to suggest
		{"net", []string{"network", "net"}, "network"},       // the first prefix or case match wins
		{"ab", []string{"xy", "ac", "ad"}, "ac"},             // the fewest edits, the earlier on a tie
		{"abcd", []string{"xbcx", "abcx"}, "abcx"},           // fewer edits beat an earlier candidate
		{"x" + strings.Repeat("network", 1<<15), fields, ""}, // a pathological key stays cheap
	} {
		if got := Closest(tc.name, tc.candidates); got != tc.want {
			t.Errorf("Closest(%.20q, %q) = %q, want %q", tc.name, tc.candidates, got, tc.want)
		}
	}
}

func TestClosestByEdits(t *testing.T) {
	fields := []string{"reference", "version", "images"}
	for _, tc := range []struct {
		name       string
		candidates []string
		want       string
	}{
		{"Reference", fields, "reference"},
		{"refrence", fields, "reference"},
		{"image", fields, "images"},
		{"ref", fields, ""},                        // a prefix, but six edits: no suggestion
		{"net", []string{"network", "net"}, "net"}, // no prefix rule: the exact match wins
		{"imgaes", fields, "images"},
		{"xxxxxxx", fields, ""},
		{strings.Repeat("version", 1<<15), fields, ""},
	} {
		if got := ClosestByEdits(tc.name, tc.candidates); got != tc.want {
			t.Errorf("ClosestByEdits(%.20q, %q) = %q, want %q", tc.name, tc.candidates, got, tc.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"kitten", "sitting", 3},
		{"network", "netwrok", 2},
		{"flaw", "lawn", 2},
		{strings.Repeat("a", maxEditInput), strings.Repeat("a", maxEditInput), 0},
		{strings.Repeat("a", maxEditInput+1), "a", maxEditInput},
		{"a", strings.Repeat("a", maxEditInput+1), maxEditInput},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%.10q, %.10q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestUnknownFieldFix(t *testing.T) {
	allowed := []string{"interfaceName", "network"}
	for _, tc := range []struct{ name, conj, want string }{
		{"netwrk", "and", "did you mean network? the fields of tcpxoInterfaces[0] are interfaceName and network"},
		{"bogus", "or", "remove it, or correct its name; the fields of tcpxoInterfaces[0] are interfaceName or network"},
		{"<<", "and", "merge keys are not supported: write the fields out; the fields of tcpxoInterfaces[0] are interfaceName and network"},
	} {
		if got := UnknownFieldFix(tc.name, allowed, "tcpxoInterfaces[0]", tc.conj); got != tc.want {
			t.Errorf("UnknownFieldFix(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}
