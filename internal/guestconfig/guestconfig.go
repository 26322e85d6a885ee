// Package guestconfig reads the guest config checker's rule files that the
// NCCL plugin installer ships as /plugins/a3plus_guest_config.textproto (the
// default profile) and a3plus_guest_config_simple.textproto (the simple one).
//
// The checker is the shim NCCL loads as its net plugin: at NCCL init it
// compares the process environment with these rules, then loads the FasTrak
// plugin. An enforced variable that is missing or has another value aborts
// or hangs the workload; variables the file does not list are reported as
// unexpected (google/nccl-plugin-gpudirect-tcpxo README, "Future Libraries";
// GoogleCloudPlatform/container-engine-accelerators gpudirect-tcpxo/README.md,
// release of Aug 21, 2025; testdata/installer/GUEST-CONFIG.md).
//
// The files are text-format protobuf of the message
// guest_config_checker.GuestConfigValidatorConfig. Its .proto is not public,
// so this package declares the subset it understands (see descriptor.go) and
// parses with google.golang.org/protobuf's prototext: a real parser, so that
// anything outside that subset is an error naming the file and line rather
// than a rule silently skipped.
package guestconfig

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
)

// Policy is a rule's check_policy.
type Policy string

const (
	// Enforced: the workload aborts or hangs at NCCL init when the variable
	// is missing or has another value.
	Enforced Policy = "POLICY_ENFORCED"
	// Recommended: a difference is reported by the checker, not fatal.
	Recommended Policy = "POLICY_RECOMMENDED"
)

// Rule is one env_var entry of a guest config file.
type Rule struct {
	Name   string
	Value  string
	Policy Policy
	// Line is the 1-based line of the rule's name field, where a reader
	// looks for the variable.
	Line int
}

// MaxSize bounds the files Parse reads. The checker's files hold a few
// dozen rules (a few KB); anything near a megabyte is not one of them, and
// reading it whole would only make every error slower to reach.
const MaxSize = 1 << 20

// MessageName is the message the files declare in their
// "# proto-message:" header.
const MessageName = "guest_config_checker.GuestConfigValidatorConfig"

// The classes of Error, for errors.Is.
var (
	// ErrTooLarge: the file exceeds MaxSize.
	ErrTooLarge = errors.New("guest config too large")
	// ErrSyntax: the file is not text-format protobuf of the expected shape.
	ErrSyntax = errors.New("guest config syntax error")
	// ErrFormatChanged: a field, policy or header tcpxogen does not know;
	// the checker's format has changed and this package must learn it.
	ErrFormatChanged = errors.New("guest config format unknown to tcpxogen")
	// ErrRule: a rule tcpxogen cannot apply (no policy, no or an invalid
	// name, no value, a duplicate).
	ErrRule = errors.New("guest config rule invalid")
)

// Error is one problem in a guest config file. Parse returns every rule
// problem it finds at once (joined with errors.Join, at most
// yamlstrict.MaxProblems of them); use errors.As to reach each one.
type Error struct {
	// File is the name the caller passed to Parse.
	File string
	// Line is 1-based; 0 when the problem is the whole file.
	Line int
	// Column is 1-based where the parser reports one, else 0.
	Column int
	// Problem says what is wrong; Fix says what to do about it.
	Problem string
	Fix     string
	// Err wraps the class (ErrTooLarge, ErrSyntax, ErrFormatChanged or
	// ErrRule) and, for a parser error, the parser's own error.
	Err error
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
		if e.Column > 0 {
			loc += ":" + strconv.Itoa(e.Column)
		}
	}
	return loc + ": " + e.Problem + ": " + e.Fix
}

func (e *Error) Unwrap() error { return e.Err }

// learnFields is what tcpxogen must learn when the file holds a field this
// package does not declare.
const learnFields = "tcpxogen understands only env_var rules with check_policy, name and value; " +
	"a new field means the checker's format changed: teach internal/guestconfig"

// learnPolicies is the same for a check_policy value.
const learnPolicies = "tcpxogen knows the policies POLICY_ENFORCED and POLICY_RECOMMENDED; " +
	"a new one means the checker's format changed: teach internal/guestconfig what it means"

// headerRE matches the "# proto-message:" header comment.
var headerRE = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*proto-message:[ \t]*(\S*)`)

// envNameRE is a portable environment variable name (POSIX's portable
// character set, as shells accept it): the checker compares with getenv, so
// a name outside it could never match.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Parse reads a guest config file's rules, in file order. file names the
// data in errors. Anything Parse does not understand is an error: a rule set
// with a rule silently dropped would pass an environment the checker aborts.
func Parse(file string, data []byte) ([]Rule, error) {
	if len(data) > MaxSize {
		return nil, &Error{File: file, Err: ErrTooLarge,
			Problem: fmt.Sprintf("is %d bytes, more than the %d a guest config checker file can plausibly hold", len(data), MaxSize),
			Fix:     "point tcpxogen at the installer's a3plus_guest_config*.textproto"}
	}
	if err := checkHeader(file, data); err != nil {
		return nil, err
	}
	md, err := descriptor()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	msg := dynamicpb.NewMessage(md)
	if err := unmarshal(data, msg); err != nil {
		return nil, protoError(file, data, err)
	}
	places := locate(data)
	list := msg.Get(md.Fields().ByName("env_var")).List()
	if len(places) != list.Len() {
		// The scanner disagrees with the parser on valid input: a bug here,
		// reported rather than guessed around, since the lines would be wrong.
		return nil, &Error{File: file, Err: ErrSyntax,
			Problem: fmt.Sprintf("tcpxogen found %d env_var rules where the parser found %d", len(places), list.Len()),
			Fix:     "report this file to tcpxogen's maintainers: internal/guestconfig's line scanner missed a construct"}
	}
	if list.Len() == 0 {
		return nil, &Error{File: file, Err: ErrFormatChanged,
			Problem: "holds no env_var rules",
			Fix:     "the installer's checker files list env_var rules; if its file really has none, the checker's format changed: teach internal/guestconfig"}
	}
	return rulesOf(file, envVarFields(md), list, places)
}

// unmarshal runs prototext, turning a panic inside it into an error: the
// input is a file from an image, and no input may crash tcpxogen.
func unmarshal(data []byte, msg *dynamicpb.Message) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the text-format parser failed (%v)", p)
		}
	}()
	return prototext.Unmarshal(data, msg)
}

// checkHeader requires the "# proto-message:" header to name MessageName:
// it is the file's own statement of which message it holds, and parsing a
// different message's text against this package's descriptor could succeed
// by accident.
func checkHeader(file string, data []byte) error {
	m := headerRE.FindSubmatchIndex(data)
	if m == nil {
		return &Error{File: file, Line: 1, Err: ErrFormatChanged,
			Problem: "has no \"# proto-message: " + MessageName + "\" header",
			Fix:     "the installer's checker files declare their message in that header; without it tcpxogen cannot tell the file is one"}
	}
	if got := string(data[m[2]:m[3]]); got != MessageName {
		return &Error{File: file, Line: lineAt(data, m[0]), Err: ErrFormatChanged,
			Problem: "declares proto-message " + yamlstrict.Quote(got) + ", not " + MessageName,
			Fix:     "tcpxogen reads only " + MessageName + "; a renamed message means the checker's format changed: teach internal/guestconfig"}
	}
	return nil
}

// lineAt is the 1-based line of byte offset off.
func lineAt(data []byte, off int) int { return bytes.Count(data[:off], []byte("\n")) + 1 }

// protoErrRE takes prototext's "(line L:C): detail"; prototext prefixes
// "proto: " with a deliberately unstable space, so only this part is read.
var protoErrRE = regexp.MustCompile(`(?s)\(line (\d+):(\d+)\): (.*)$`)

// maxDetail bounds, in runes, how much of prototext's own message an error
// repeats: it quotes input tokens, which can be arbitrarily long.
const maxDetail = 120

// protoError turns a prototext error into an Error with its line and what
// tcpxogen must learn.
func protoError(file string, data []byte, err error) error {
	msg := err.Error()
	m := protoErrRE.FindStringSubmatch(msg)
	if m == nil {
		if strings.HasSuffix(msg, "unexpected EOF") {
			// prototext gives no position here: the last line is the place.
			return &Error{File: file, Line: lineAt(data, len(bytes.TrimRight(data, " \t\r\n"))), Err: fmt.Errorf("%w: %w", ErrSyntax, err),
				Problem: "ends in the middle of a rule or list",
				Fix:     "close every env_var { with } and every [ with ]"}
		}
		return &Error{File: file, Err: fmt.Errorf("%w: %w", ErrSyntax, err),
			Problem: "is not valid text-format protobuf (" + cut(msg) + ")",
			Fix:     "compare it with the installer image's copy"}
	}
	line, _ := strconv.Atoi(m[1])
	col, _ := strconv.Atoi(m[2])
	detail := m[3]
	e := &Error{File: file, Line: line, Column: col, Err: fmt.Errorf("%w: %w", ErrSyntax, err)}
	unknown, isUnknown := strings.CutPrefix(detail, "unknown field: ")
	switch {
	case isUnknown && unknown == "env_var":
		// env_var is known only at the top level: one inside a rule means
		// the rule before it was never closed.
		e.Problem = "env_var inside a rule: the rule before it is not closed"
		e.Fix = "close each env_var rule with }"
	case isUnknown && slices.Contains(fieldNames[1:], unknown):
		// A rule's field at the top level: a rule was closed too early.
		e.Problem = unknown + " outside an env_var rule"
		e.Fix = "each check_policy, name and value belongs inside env_var { ... }; look for a } too many"
	case isUnknown:
		e.Err = fmt.Errorf("%w: %w", ErrFormatChanged, err)
		e.Problem = "unknown field " + yamlstrict.Quote(unknown)
		e.Fix = learnFields
		if s := yamlstrict.ClosestByEdits(unknown, fieldNames); s != "" {
			e.Fix = "did you mean " + s + "? " + learnFields
		}
	case strings.HasPrefix(detail, "unable to resolve"), strings.HasPrefix(detail, "cannot specify field by number"),
		strings.HasPrefix(detail, "invalid field number"):
		e.Err = fmt.Errorf("%w: %w", ErrFormatChanged, err)
		e.Problem = "a field tcpxogen cannot name (" + cut(detail) + ")"
		e.Fix = learnFields
	case strings.HasPrefix(detail, "invalid value for enum type: "):
		e.Err = fmt.Errorf("%w: %w", ErrFormatChanged, err)
		e.Problem = "unknown check_policy " + yamlstrict.Quote(strings.TrimPrefix(detail, "invalid value for enum type: "))
		e.Fix = learnPolicies
	case strings.HasPrefix(detail, "non-repeated field "):
		e.Err = fmt.Errorf("%w: %w", ErrRule, err)
		e.Problem = "a rule sets a field twice (" + cut(detail) + ")"
		e.Fix = "each env_var sets check_policy, name and value once"
	case strings.HasPrefix(detail, "invalid value for string type: "):
		e.Problem = "name and value must be quoted strings, not " + yamlstrict.Quote(strings.TrimPrefix(detail, "invalid value for string type: "))
		e.Fix = "quote the value, as in name: \"NCCL_PROTO\""
	default:
		e.Problem = "is not valid text-format protobuf (" + cut(detail) + ")"
		e.Fix = "compare it with the installer image's copy"
	}
	return e
}

// cut bounds a parser message for repetition.
func cut(s string) string {
	if utf8.RuneCountInString(s) > maxDetail {
		return string([]rune(s)[:maxDetail]) + "…"
	}
	return s
}

// rulesOf validates the parsed entries and turns them into rules.
func rulesOf(file string, fields envVarDescs, list protoreflect.List, places []place) ([]Rule, error) {
	var problems []*Error
	fail := func(line int, problem, fix string) {
		problems = append(problems, &Error{File: file, Line: line, Problem: problem, Fix: fix, Err: ErrRule})
	}
	rules := make([]Rule, 0, list.Len())
	firstLine := map[string]int{}
	for i := range list.Len() {
		ev := list.Get(i).Message()
		pl := places[i]
		line := pl.line()
		r := Rule{Line: line}
		what := fmt.Sprintf("env_var #%d", i+1)
		r.Name = ev.Get(fields.name).String()
		if r.Name != "" {
			what = "env_var " + yamlstrict.Quote(r.Name)
		}
		switch {
		case r.Name == "":
			fail(line, what+" has no name", "every rule names the environment variable it checks")
		case !envNameRE.MatchString(r.Name):
			fail(line, what+" is not a valid environment variable name", "names are letters, digits and underscores, not starting with a digit")
		default:
			if first, dup := firstLine[r.Name]; dup {
				fail(line, what+" is listed again (first at line "+strconv.Itoa(first)+")",
					"the checker's rules name each variable once; two rules for one variable cannot both hold")
			} else {
				firstLine[r.Name] = line
			}
		}
		switch {
		case pl.policyNumeric:
			// prototext accepts enum numbers, but the numbers are this
			// package's invention: only the names are the checker's.
			fail(pl.policyLine, what+" gives check_policy as a number", "write the policy's name; "+learnPolicies)
		case !ev.Has(fields.policy):
			fail(line, what+" has no check_policy", "give it POLICY_ENFORCED or POLICY_RECOMMENDED; if the installer's file really "+
				"omits it, the checker's format changed: teach internal/guestconfig what a rule without a policy means")
		default:
			switch n := ev.Get(fields.policy).Enum(); n {
			case policyEnforced:
				r.Policy = Enforced
			case policyRecommended:
				r.Policy = Recommended
			default:
				fail(pl.policyLine, what+" has check_policy "+policyName(fields.policy, n), learnPolicies)
			}
		}
		if !ev.Has(fields.value) {
			fail(line, what+" has no value", "give it the value the checker compares with; if the installer's file really "+
				"omits it, the checker's format changed: teach internal/guestconfig what a rule without a value means")
		} else {
			r.Value = ev.Get(fields.value).String()
			if !utf8.ValidString(r.Value) || strings.ContainsRune(r.Value, 0) {
				fail(line, what+" has a value that is not UTF-8 text without NUL bytes", "an environment value cannot hold it; compare the file with the installer image's copy")
			}
		}
		rules = append(rules, r)
	}
	if err := yamlstrict.Join(problems, func(problem, fix string) *Error {
		return &Error{File: file, Problem: problem, Fix: fix, Err: ErrRule}
	}); err != nil {
		return nil, err
	}
	return rules, nil
}
