package guestconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
)

const header = "# proto-message: guest_config_checker.GuestConfigValidatorConfig\n"

// problems returns the *Error values err holds, failing the test on
// anything else.
func problems(t *testing.T, err error) []*Error {
	t.Helper()
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	out := make([]*Error, 0, len(errs))
	for _, e := range errs {
		var ge *Error
		if !errors.As(e, &ge) {
			t.Fatalf("error %v (%T) is not a *guestconfig.Error", e, e)
		}
		out = append(out, ge)
	}
	return out
}

func TestParseForms(t *testing.T) {
	// The text format has several spellings of one list of messages; the
	// lines must follow each rule wherever it sits.
	in := header + `# a comment with a brace { and a quote "
env_var {
  check_policy: POLICY_ENFORCED # trailing comment }
  name: "NCCL_PROTO"
  value: "Simple,LL128"
}
env_var: [
  { check_policy: POLICY_RECOMMENDED, name: 'NCCL_TUNER_PLUGIN', value: "libnccl-" "tuner.so" },
  <
    value: "{not a brace}"
    name:
      "NCCL_BUFFSIZE"
    check_policy: POLICY_ENFORCED
  >
]
env_var { check_policy: POLICY_ENFORCED; name: "NCCL_EMPTY"; value: "" }
`
	got, err := Parse("f.textproto", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{
		{Name: "NCCL_PROTO", Value: "Simple,LL128", Policy: Enforced, Line: 5},
		{Name: "NCCL_TUNER_PLUGIN", Value: "libnccl-tuner.so", Policy: Recommended, Line: 9},
		{Name: "NCCL_BUFFSIZE", Value: "{not a brace}", Policy: Enforced, Line: 12},
		{Name: "NCCL_EMPTY", Value: "", Policy: Enforced, Line: 17},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("rules (-want +got):\n%s", d)
	}
}

func TestParseRejects(t *testing.T) {
	rule := func(body string) string { return header + "env_var {\n" + body + "\n}\n" }
	for _, tc := range []struct {
		name, in string
		class    error
		line     int
		problem  string // substring of the first problem
		fix      string // substring of its fix
	}{
		{"no header", "env_var { check_policy: POLICY_ENFORCED name: \"A\" value: \"1\" }\n", ErrFormatChanged, 1, "has no \"# proto-message:", "declare their message"},
		{"another message", "# proto-message: foo.Bar\n" + "env_var {}\n", ErrFormatChanged, 1, `declares proto-message "foo.Bar"`, "teach internal/guestconfig"},
		{"no rules", header, ErrFormatChanged, 0, "holds no env_var rules", "teach internal/guestconfig"},
		{"top-level unknown field", header + "version: 2\n", ErrFormatChanged, 2, `unknown field "version"`, "teach internal/guestconfig"},
		{"misspelt field", rule("check_policy: POLICY_ENFORCED\nname: \"A\"\nvalu: \"1\""), ErrFormatChanged, 5, `unknown field "valu"`, "did you mean value?"},
		{"field by number", rule("2: \"A\""), ErrFormatChanged, 3, "a field tcpxogen cannot name", "teach internal/guestconfig"},
		{"extension", rule("[x.y]: 1"), ErrFormatChanged, 3, "[x.y]", "teach internal/guestconfig"},
		{"unknown policy", rule("check_policy: POLICY_REQUIRED\nname: \"A\"\nvalue: \"1\""), ErrFormatChanged, 3, `unknown check_policy "POLICY_REQUIRED"`, "a new one means the checker's format changed"},
		{"numeric policy", rule("check_policy: 1\nname: \"A\"\nvalue: \"1\""), ErrRule, 3, `env_var "A" gives check_policy as a number`, "write the policy's name"},
		{"negative numeric policy", rule("check_policy: -1\nname: \"A\"\nvalue: \"1\""), ErrRule, 3, "as a number", "write the policy's name"},
		{"zero policy", rule("check_policy: POLICY_UNSPECIFIED\nname: \"A\"\nvalue: \"1\""), ErrRule, 3, "has check_policy POLICY_UNSPECIFIED", "POLICY_ENFORCED and POLICY_RECOMMENDED"},
		{"missing policy", rule("name: \"A\"\nvalue: \"1\""), ErrRule, 3, `env_var "A" has no check_policy`, "a rule without a policy"},
		{"missing value", rule("check_policy: POLICY_ENFORCED\nname: \"A\""), ErrRule, 4, `env_var "A" has no value`, "a rule without a value"},
		{"missing name", rule("check_policy: POLICY_ENFORCED\nvalue: \"1\""), ErrRule, 2, "env_var #1 has no name", "names the environment variable"},
		{"invalid name", rule("check_policy: POLICY_ENFORCED\nname: \"NCCL PROTO\"\nvalue: \"1\""), ErrRule, 4, `env_var "NCCL PROTO" is not a valid environment variable name`, "letters, digits and underscores"},
		{"name with =", rule("check_policy: POLICY_ENFORCED\nname: \"A=B\"\nvalue: \"1\""), ErrRule, 4, "not a valid environment variable name", ""},
		{"NUL in value", rule("check_policy: POLICY_ENFORCED\nname: \"A\"\nvalue: \"a\\000b\""), ErrRule, 4, "not UTF-8 text without NUL bytes", ""},
		{"invalid UTF-8 value", rule("check_policy: POLICY_ENFORCED\nname: \"A\"\nvalue: \"\\xff\""), ErrRule, 4, "not UTF-8 text", ""},
		{"field twice", rule("check_policy: POLICY_ENFORCED\nname: \"A\"\nname: \"B\"\nvalue: \"1\""), ErrRule, 5, "a rule sets a field twice", "once"},
		{"unquoted value", rule("check_policy: POLICY_ENFORCED\nname: \"A\"\nvalue: 1"), ErrSyntax, 5, "must be quoted strings, not \"1\"", "quote the value"},
		{"rule closed early", header + "env_var { check_policy: POLICY_ENFORCED }\nname: \"A\"\n", ErrSyntax, 3, "name outside an env_var rule", "a } too many"},
		{"unterminated string", rule("check_policy: POLICY_ENFORCED\nname: \"A\nvalue: \"1\""), ErrSyntax, 4, "is not valid text-format protobuf", "installer image's copy"},
		{"unclosed file", header + "env_var {\n  check_policy: POLICY_ENFORCED\n", ErrSyntax, 3, "ends in the middle of a rule or list", "close every env_var"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules, err := Parse("f.textproto", []byte(tc.in))
			if err == nil {
				t.Fatalf("accepted: %+v", rules)
			}
			if rules != nil {
				t.Errorf("rules returned with an error: %+v", rules)
			}
			if !errors.Is(err, tc.class) {
				t.Errorf("error %q is not %v", err, tc.class)
			}
			p := problems(t, err)[0]
			if p.File != "f.textproto" || p.Line != tc.line || !strings.Contains(p.Problem, tc.problem) || !strings.Contains(p.Fix, tc.fix) {
				t.Errorf("got %s:%d problem %q fix %q; want line %d, problem containing %q, fix containing %q",
					p.File, p.Line, p.Problem, p.Fix, tc.line, tc.problem, tc.fix)
			}
			if !strings.HasPrefix(err.Error(), "f.textproto") {
				t.Errorf("message %q does not start with the file", err)
			}
		})
	}
}

// Every hostile file is a named error: class, line and the words that say
// what tcpxogen must learn or the editor must fix.
func TestParseHostile(t *testing.T) {
	for _, tc := range []struct {
		file    string
		class   error
		line    int
		problem string
	}{
		{"unknown-field.textproto", ErrFormatChanged, 8, `unknown field "min_plugin_version"`},
		{"unknown-policy.textproto", ErrFormatChanged, 10, `unknown check_policy "POLICY_FORBIDDEN"`},
		{"malformed.textproto", ErrSyntax, 9, "the rule before it is not closed"},
		{"duplicate.textproto", ErrRule, 11, `env_var "NCCL_PROTO" is listed again (first at line 6)`},
		{"empty-name.textproto", ErrRule, 6, "env_var #1 has no name"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", "hostile", tc.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Parse(path, data)
			if !errors.Is(err, tc.class) {
				t.Fatalf("error %v is not %v", err, tc.class)
			}
			p := problems(t, err)
			if len(p) != 1 || p[0].Line != tc.line || !strings.Contains(p[0].Problem, tc.problem) {
				t.Fatalf("got %v; want one problem at line %d containing %q", err, tc.line, tc.problem)
			}
			if !strings.HasPrefix(err.Error(), path+":") {
				t.Errorf("message %q does not name the file", err)
			}
		})
	}
	// A rule the profile contradicts parses: the contradiction is
	// internal/fabric's to find.
	data, err := os.ReadFile(filepath.Join("testdata", "hostile", "contradicts-profile.textproto"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("contradicts-profile.textproto", data); err != nil {
		t.Fatal(err)
	}
}

func TestParseTooLarge(t *testing.T) {
	// A valid file just over the bound: the size alone rejects it.
	var b strings.Builder
	b.WriteString(header)
	for i := 0; b.Len() <= MaxSize; i++ {
		b.WriteString("env_var { check_policy: POLICY_ENFORCED name: \"NCCL_X\" value: \"1\" }\n")
	}
	data := []byte(b.String())
	_, err := Parse("big.textproto", data)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if p := problems(t, err)[0]; !strings.Contains(p.Problem, "is "+strconv.Itoa(len(data))+" bytes") {
		t.Errorf("problem %q does not give the real size %d", p.Problem, len(data))
	}
	// At the bound it is read (and rejected for its duplicates instead).
	if _, err := Parse("edge.textproto", data[:MaxSize]); errors.Is(err, ErrTooLarge) {
		t.Errorf("a file of exactly MaxSize bytes was refused for its size")
	}
}

// Messages repeat at most a bounded excerpt of the input, however long
// the offending token.
func TestParseMessagesBounded(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	for name, in := range map[string]string{
		"unknown field":  header + "env_var { " + long + ": 1 }\n",
		"unknown policy": header + "env_var { check_policy: " + long + " }\n",
		"unquoted value": header + "env_var { name: " + long + " }\n",
		"invalid name":   header + "env_var { check_policy: POLICY_ENFORCED name: \"" + long + "-\" value: \"1\" }\n",
		"header":         "# proto-message: " + long + "\n",
		"syntax":         header + "env_var { name: \"" + long,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("f.textproto", []byte(in))
			if err == nil {
				t.Fatal("accepted")
			}
			if n := len(err.Error()); n > 1000 {
				t.Fatalf("message is %d bytes: %.200s...", n, err)
			}
		})
	}
}

// A file full of bad rules reports the first yamlstrict.MaxProblems and a
// count of the rest, each on its own line.
func TestParseProblemsBounded(t *testing.T) {
	in := header + strings.Repeat("env_var {\n  check_policy: POLICY_ENFORCED\n  value: \"1\"\n}\n", 30)
	_, err := Parse("f.textproto", []byte(in))
	p := problems(t, err)
	if len(p) != yamlstrict.MaxProblems+1 {
		t.Fatalf("%d problems reported, want %d", len(p), yamlstrict.MaxProblems+1)
	}
	if p[0].Line != 2 || p[1].Line != 6 || !strings.Contains(p[1].Problem, "env_var #2 has no name") {
		t.Errorf("first problems %+v, %+v", p[0], p[1])
	}
	if last := p[len(p)-1]; !strings.Contains(last.Problem, "10 more problem(s) not shown") || !errors.Is(last, ErrRule) {
		t.Errorf("last problem %+v", last)
	}
}
