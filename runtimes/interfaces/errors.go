package interfaces

import (
	"errors"
	"strconv"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
)

// ErrNoMapping is wrapped by the rejection of an empty mapping, of every
// layout. A renderer that finds Mapping.IsZero can return it (or match it with
// errors.Is) to tell "nothing was configured" from "the configuration is
// wrong": the first is fixed by passing a mapping, the second by correcting
// one. Its text is TCPXO's; Layout.NoMapping gives each layout's, which
// errors.Is matches to ErrNoMapping.
var ErrNoMapping = errors.New("no GPU NIC to GKE Network mapping: an A3 Mega TCPXO pod needs eth1..eth8 bound to this cluster's Device-type GKE Networks, and there is no default")

// Error is one rejected part of a mapping, the located error every YAML
// reader shares. Parsers report every problem they find at once (joined with
// errors.Join, in a deterministic order), so a user fixes the input in one
// pass; use errors.As to reach the individual problems. Its Path names what
// is wrong as the user wrote it: a GPU NIC ("eth8"), a pair of Parse's input
// (`pair 3 "eth1net-1"`), or a YAML path ("tcpxoInterfaces[2].network"); Line
// is 0 for Parse and FromBindings, whose input has no lines; Err is
// ErrNoMapping or a YAML syntax error, if either is the cause.
type Error = yamlstrict.Error

// joinErrors returns nil, the single *Error itself (so a caller can type-assert
// the common case), or all of them joined, at most yamlstrict.MaxProblems and
// a count of the rest.
func joinErrors(errs []*Error) error {
	return yamlstrict.Join(errs, func(problem, fix string) *Error { return &Error{Problem: problem, Fix: fix} })
}

// show renders user input for a message: plain tokens as they are, anything
// else as quoted does, so that whitespace, empty strings and control
// characters are visible and cannot garble a terminal.
func show(s string) string {
	if s != "" && plainToken(s) && len(s) <= yamlstrict.MaxShown {
		return s
	}
	return quoted(s)
}

func plainToken(s string) bool {
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("-_.[]", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// quoted always quotes (for network names, where the quotes mark the value
// off from the sentence), cutting long values short.
func quoted(s string) string { return yamlstrict.Quote(s) }

// times words a repeat count: "twice", "3 times".
func times(n int) string {
	if n == 2 {
		return "twice"
	}
	return strconv.Itoa(n) + " times"
}

// andList joins words as "a", "a and b", "a, b and c".
func andList(words []string) string { return yamlstrict.List(words, "and") }
