package interfaces

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
)

func TestParseValid(t *testing.T) {
	long41 := "a" + strings.Repeat("b", 39) + "c"
	tests := []struct {
		name, in, want string
	}{
		{"canonical", canonical, canonical},
		{"reversed", "eth8=net-8,eth7=net-7,eth6=net-6,eth5=net-5,eth4=net-4,eth3=net-3,eth2=net-2,eth1=net-1", canonical},
		{"whitespace around pairs and '='", "  eth1 = net-1 ,\teth2= net-2, eth3 =net-3,eth4=net-4 ,eth5=net-5,eth6=net-6,eth7=net-7,eth8=net-8\n", canonical},
		{"41 characters is the limit", pairs(map[string]string{"eth5": "eth5=" + long41}), strings.Replace(canonical, "net-5", long41, 1)},
		{"one letter", pairs(map[string]string{"eth1": "eth1=a"}), strings.Replace(canonical, "net-1", "a", 1)},
		{"inner hyphens and digits", pairs(map[string]string{"eth2": "eth2=a--0-b9"}), strings.Replace(canonical, "net-2", "a--0-b9", 1)},
		{"network named like the default network is still a name", pairs(map[string]string{"eth3": "eth3=default"}), strings.Replace(canonical, "net-3", "default", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if got := m.String(); got != tt.want {
				t.Fatalf("Parse(%q).String() = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// Assignment is by name: any order of the same pairs is the same Mapping, and
// a pair's position never decides its interface.
func TestParseOrderIndependent(t *testing.T) {
	base := strings.Split("eth1=alpha,eth2=bravo,eth3=charlie,eth4=delta,eth5=echo,eth6=foxtrot,eth7=golf,eth8=hotel", ",")
	want := mustParse(t, strings.Join(base, ","))
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		shuffled := append([]string(nil), base...)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		in := strings.Join(shuffled, ",")
		got := mustParse(t, in)
		if got != want || got.String() != want.String() {
			t.Fatalf("Parse(%q) = %s, want %s", in, got, want)
		}
		// The interface in first position is whatever the pair says.
		first, network, _ := strings.Cut(shuffled[0], "=")
		if n, _ := got.Network(first); n != network {
			t.Fatalf("Parse(%q): %s → %q, want %q", in, first, n, network)
		}
	}
}

func TestParseRejects(t *testing.T) {
	name42 := strings.Repeat("a", 42)
	tests := []struct {
		name  string
		in    string
		wants []want
	}{
		{"empty input", "", []want{{"", 0, "a GPU NIC to GKE Network mapping is required; there is no default"}}},
		{"blank input", " \t\n", []want{{"", 0, "pass eth1=<network>,eth2=<network>,...,eth8=<network>"}}},
		{"seven entries", pairs(map[string]string{"eth8": ""}), []want{
			{"eth8", 0, "eth8 is not mapped: add eth8=<network> to the mapping"},
		}},
		{"seven entries mentions the gVNIC cause", pairs(map[string]string{"eth3": ""}), []want{
			{"eth3", 0, "a GPU node pool with an additional gVNIC network has only seven"},
		}},
		{"duplicate network names both interfaces", pairs(map[string]string{"eth6": "eth6=net-2"}), []want{
			{"eth6", 0, `eth6 is mapped to "net-2", which eth2 already uses`},
		}},
		{"three interfaces on one network", pairs(map[string]string{"eth4": "eth4=net-1", "eth7": "eth7=net-1"}), []want{
			{"eth4", 0, `eth4 is mapped to "net-1", which eth1 already uses`},
			{"eth7", 0, `eth7 is mapped to "net-1", which eth1 already uses`},
		}},
		{"eth9", pairs(map[string]string{"eth8": "eth9=net-8"}), []want{
			{"eth9", 0, "eth9 is not a GPU NIC of a3-megagpu-8g: use eth1..eth8"},
			{"eth8", 0, "eth8 is not mapped"},
		}},
		{"eth9 as a ninth pair", canonical + ",eth9=net-9", []want{
			{"eth9", 0, "eth9 is not a GPU NIC of a3-megagpu-8g: use eth1..eth8"},
		}},
		{"eth0 is the default network", "eth0=default," + canonical, []want{
			{"eth0", 0, "eth0 is the pod's default interface, which GKE attaches to the cluster's default network; it is not part of the GPU NIC mapping: remove it"},
		}},
		{"upper-case interface", pairs(map[string]string{"eth2": "ETH2=net-2"}), []want{
			{"ETH2", 0, "ETH2 is not a GPU NIC of a3-megagpu-8g: did you mean eth2?"},
			{"eth2", 0, "eth2 is not mapped"},
		}},
		{"interface given twice", pairs(map[string]string{"eth4": "eth3=net-4"}), []want{
			{"eth3", 0, `eth3 is mapped twice (pair 3 "eth3=net-3" and pair 4 "eth3=net-4"): keep exactly one eth3=<network>`},
			{"eth4", 0, "eth4 is not mapped"},
		}},
		{"interface given three times, same network", canonical + ",eth3=net-3,eth3=net-3", []want{
			{"eth3", 0, "eth3 is mapped 3 times"},
		}},
		{"42-character name", pairs(map[string]string{"eth5": "eth5=" + name42}), []want{
			{"eth5", 0, `eth5 is mapped to "` + name42 + `", which is 42 characters long, over GKE's limit of 41`},
		}},
		{"upper-case name", pairs(map[string]string{"eth1": "eth1=Net-1"}), []want{
			{"eth1", 0, `eth1 is mapped to "Net-1", which has upper-case letters: GKE Network names are lower-case`},
		}},
		{"leading digit", pairs(map[string]string{"eth2": "eth2=2net"}), []want{
			{"eth2", 0, `eth2 is mapped to "2net", which starts with '2'; a GKE Network name starts with a letter a-z`},
		}},
		{"leading hyphen", pairs(map[string]string{"eth2": "eth2=-net"}), []want{
			{"eth2", 0, `which starts with '-'`},
		}},
		{"trailing hyphen", pairs(map[string]string{"eth3": "eth3=net-"}), []want{
			{"eth3", 0, `eth3 is mapped to "net-", which ends with '-'`},
		}},
		{"underscore", pairs(map[string]string{"eth4": "eth4=net_4"}), []want{
			{"eth4", 0, `eth4 is mapped to "net_4", which contains '_'; a GKE Network name has only a-z, 0-9 and '-'`},
		}},
		{"non-ASCII letter", pairs(map[string]string{"eth4": "eth4=nét-4"}), []want{
			{"eth4", 0, `contains non-ASCII U+00E9 LATIN SMALL LETTER E WITH ACUTE`},
		}},
		{"empty network", pairs(map[string]string{"eth1": "eth1="}), []want{
			{"eth1", 0, "eth1 has no network: write it as eth1=<network>"},
		}},
		{"empty network after trimming", pairs(map[string]string{"eth1": "eth1 =  "}), []want{
			{"eth1", 0, "eth1 has no network"},
		}},
		{"pair without '='", pairs(map[string]string{"eth7": "eth7:net-7"}), []want{
			{`pair 7 "eth7:net-7"`, 0, `pair 7 "eth7:net-7" has no '=': write each pair as <interface>=<network>, here eth<1-8>=<network>`},
			{"eth7", 0, "eth7 is not mapped"},
		}},
		{"interface alone", pairs(map[string]string{"eth7": "eth7"}), []want{
			{`pair 7 "eth7"`, 0, "has no '=': write each pair as <interface>=<network>, here eth7=<network>"},
			{"eth7", 0, "eth7 is not mapped"},
		}},
		{"no interface name", pairs(map[string]string{"eth7": "=net-7"}), []want{
			{`pair 7 "=net-7"`, 0, "has no interface name: write it as eth<1-8>=net-7"},
			{"eth7", 0, "eth7 is not mapped"},
		}},
		{"inner space in a name", pairs(map[string]string{"eth6": "eth6=net 6"}), []want{
			{"eth6", 0, `eth6 is mapped to "net 6", which contains whitespace`},
		}},
		{"missing comma reads as one name", strings.Replace(canonical, ",eth8", " eth8", 1), []want{
			{"eth7", 0, `"net-7 eth8=net-8", which contains whitespace: network names have no spaces; use the name of this cluster's Device-type GKE Network for that NIC's VPC, exactly as ` + "`kubectl get networks`" + ` prints it; if this is more than one pair, separate the pairs with ','`},
			{"eth8", 0, "eth8 is not mapped"},
		}},
		{"semicolon separator", strings.Replace(canonical, ",eth8", ";eth8", 1), []want{
			{"eth7", 0, `contains ';'`},
			{"eth8", 0, "eth8 is not mapped"},
		}},
		{"trailing comma", canonical + ",", []want{
			{"pair 9", 0, "pair 9 is empty: remove the extra ','"},
		}},
		{"double comma", strings.Replace(canonical, ",", ",,", 1), []want{
			{"pair 2", 0, "pair 2 is empty"},
		}},
		{"interface with inner space", pairs(map[string]string{"eth1": "eth 1=net-1"}), []want{
			{`"eth 1"`, 0, `"eth 1" is not a GPU NIC`},
			{"eth1", 0, "eth1 is not mapped"},
		}},
		{"control characters are quoted", pairs(map[string]string{"eth1": "eth1\x1b[2J=net-1"}), []want{
			{`"eth1\x1b[2J" (non-printable U+001B (a control character))`, 0, "is not a GPU NIC"},
			{"eth1", 0, "eth1 is not mapped"},
		}},
		{"problems come in input order, then per interface", "eth2=B,eth1,eth9=x,eth2=c,eth3=net-1,eth4=net-1", []want{
			{"eth2", 0, "upper-case"},
			{`pair 2 "eth1"`, 0, "has no '='"},
			{"eth9", 0, "not a GPU NIC"},
			{"eth2", 0, "mapped twice"},
			{"eth1", 0, "eth1 is not mapped"},
			{"eth5", 0, "eth5 is not mapped"},
			{"eth6", 0, "eth6 is not mapped"},
			{"eth7", 0, "eth7 is not mapped"},
			{"eth8", 0, "eth8 is not mapped"},
			{"eth4", 0, `which eth3 already uses`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) accepted it as %v", tt.in, m)
			}
			if !m.IsZero() {
				t.Errorf("rejected input returned a non-zero Mapping %v", m)
			}
			checkProblems(t, err, true, tt.wants...)
		})
	}
}

func TestParseEmptyIsErrNoMapping(t *testing.T) {
	for _, in := range []string{"", "   ", "\n"} {
		_, err := Parse(in)
		if !errors.Is(err, ErrNoMapping) {
			t.Errorf("Parse(%q) = %v, want an error wrapping ErrNoMapping", in, err)
		}
	}
	// A wrong mapping is not a missing one: callers tell them apart.
	if _, err := Parse(pairs(map[string]string{"eth8": ""})); err == nil || errors.Is(err, ErrNoMapping) {
		t.Errorf("incomplete mapping: got %v, want an error not wrapping ErrNoMapping", err)
	}
}

func TestParseSingleProblemIsAnError(t *testing.T) {
	_, err := Parse(pairs(map[string]string{"eth1": "eth1=Net-1"}))
	if _, ok := err.(*Error); !ok {
		t.Fatalf("one problem: got %T, want *Error so that callers can type-assert it", err)
	}
}

func TestParseDeterministic(t *testing.T) {
	in := "eth9=a,eth1=A,eth2=b,eth3=b,eth4=c,eth5=c,eth6=-x,eth3=q"
	_, first := Parse(in)
	for range 20 {
		if _, err := Parse(in); err.Error() != first.Error() {
			t.Fatalf("messages differ between runs:\n%v\n---\n%v", first, err)
		}
	}
}

func TestParseCapsProblems(t *testing.T) {
	var bad []string
	for i := range 100 {
		bad = append(bad, fmt.Sprintf("x%d=y", i))
	}
	_, err := Parse(strings.Join(bad, ","))
	got := problems(t, err)
	// 100 unknown interfaces and 8 missing ones: the first 20, then a summary.
	if len(got) != yamlstrict.MaxProblems+1 {
		t.Fatalf("got %d problems, want %d", len(got), yamlstrict.MaxProblems+1)
	}
	if last := got[yamlstrict.MaxProblems].Error(); !strings.Contains(last, "88 more problem(s) not shown") {
		t.Fatalf("last problem = %q, want a count of the rest", last)
	}
	if !strings.Contains(got[0].Error(), "x0 is not a GPU NIC") {
		t.Fatalf("first problem = %q, want the first pair's", got[0])
	}
}

func TestParseLongValuesAreShortened(t *testing.T) {
	huge := strings.Repeat("n", 10000)
	_, err := Parse(pairs(map[string]string{"eth1": "eth1=" + huge}))
	msg := err.Error()
	if !strings.Contains(msg, "is 10000 characters long") {
		t.Fatalf("message does not give the length: %q", msg)
	}
	if len(msg) > 1000 {
		t.Fatalf("message repeats the whole value (%d bytes)", len(msg))
	}
}

func TestNetworkNameRules(t *testing.T) {
	tests := []struct {
		name     string
		fragment string // "" when valid
	}{
		{"a", ""},
		{"a1", ""},
		{"a-1", ""},
		{strings.Repeat("a", 41), ""},
		{strings.Repeat("a", 42), "42 characters long"},
		{strings.Repeat("A", 42), "42 characters long"},
		{"Net", "upper-case"},
		{"1net", "starts with '1'"},
		{"-net", "starts with '-'"},
		{"net-", "ends with '-'"},
		{"n.et", "contains '.'"},
		{"n et", "whitespace"},
		{"n\u00a0et", "whitespace"},
		{"nét", "contains non-ASCII U+00E9 LATIN SMALL LETTER E WITH ACUTE"},
		{"", "is empty"},
	}
	for _, tt := range tests {
		_, problem, ok := networkNameProblem(tt.name)
		if ok != (tt.fragment == "") {
			t.Errorf("networkNameProblem(%q) ok = %v, want %v", tt.name, ok, tt.fragment == "")
		}
		if !strings.Contains(problem, tt.fragment) {
			t.Errorf("networkNameProblem(%q) = %q, want %q in it", tt.name, problem, tt.fragment)
		}
	}
}
