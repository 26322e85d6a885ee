package interfaces

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// yamlKey is the key of the binding list, in a standalone document and in a
// recipe's configuration.gke section alike.
const yamlKey = "tcpxoInterfaces"

// maxYAMLSize bounds what ParseYAML reads. A real document is under 1 KiB;
// the bound keeps a wrong path (a log, an image) from being parsed whole.
const maxYAMLSize = 1 << 20

var (
	documentFields = []string{yamlKey}
	bindingFields  = []string{"interfaceName", "network"}
)

// yamlShape is the expected document, for messages.
var yamlShape = yamlKey + ": followed by eight entries, " +
	listForm.binding("eth1", "<network>") + " through " + listForm.binding("eth8", "<network>")

// ParseYAML reads a standalone mapping document:
//
//	tcpxoInterfaces:
//	  - {interfaceName: eth1, network: net-1}
//	  - {interfaceName: eth2, network: net-2}
//	  ...
//	  - {interfaceName: eth8, network: net-8}
//
// It is strict, because a file edited by hand should fail loudly rather than
// be half-read: unknown fields, duplicate keys, values of the wrong type
// (write a network named like a number or true/false in quotes), a second
// document and an empty list are all rejected. The binding rules are Parse's;
// entries may be in any order. Every *Error carries the line it refers to
// (0 only for problems with the input as a whole, such as an empty or
// oversized document), and the errors are in line order. Callers add the file
// name when wrapping the error.
func ParseYAML(data []byte) (m Mapping, err error) {
	// yaml.v3 re-panics on internal errors it does not recognise; input must
	// never crash the tool, so that becomes a rejection.
	defer func() {
		if r := recover(); r != nil {
			m, err = Mapping{}, &Error{Entry: "the document",
				Problem: fmt.Sprintf("could not be parsed: the YAML parser failed (%v)", r),
				Fix:     "check that this is the mapping document you meant to load; it should be " + yamlShape}
		}
	}()
	if len(data) > maxYAMLSize {
		return Mapping{}, &Error{Entry: "the document",
			Problem: fmt.Sprintf("is %d bytes, over the %d-byte limit for a mapping document", len(data), maxYAMLSize),
			Fix:     "check the path: the document should be " + yamlShape}
	}

	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return Mapping{}, emptyDocument(0)
		}
		return Mapping{}, syntaxError(data, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return Mapping{}, syntaxError(data, err)
	default:
		return Mapping{}, &Error{Line: next.Line, Entry: "a second YAML document", Problem: "starts here",
			Fix: "keep exactly one document: remove the '---' separator and what follows it"}
	}
	if len(doc.Content) == 0 {
		return Mapping{}, emptyDocument(doc.Line)
	}
	root := deref(doc.Content[0])
	if root.ShortTag() == "!!null" {
		return Mapping{}, emptyDocument(root.Line)
	}
	if root.Kind != yaml.MappingNode {
		fix := "write " + yamlShape
		if root.Kind == yaml.SequenceNode {
			fix = "put the list under the key " + yamlKey + ":"
		}
		return Mapping{}, &Error{Line: root.Line, Entry: "the document",
			Problem: "is " + kindWord(root) + ", not a mapping with the key " + yamlKey, Fix: fix}
	}

	r := &yamlReader{}
	fields := r.fields(root, "", documentFields)
	list, ok := fields[yamlKey]
	if !ok {
		r.errs = append(r.errs, &Error{Line: root.Line, Entry: yamlKey,
			Problem: "is missing; a GPU NIC to GKE Network mapping is required, and there is no default, because the Network names differ per cluster",
			Fix:     "add " + yamlShape + ", naming this cluster's Device-type GKE Networks (`kubectl get networks` lists them)",
			Err:     ErrNoMapping})
		return Mapping{}, r.result()
	}
	seq := deref(list.value)
	switch {
	case seq.ShortTag() == "!!null" || seq.Kind == yaml.SequenceNode && len(seq.Content) == 0:
		r.errs = append(r.errs, &Error{Line: list.key.Line, Entry: yamlKey,
			Problem: "is empty; a GPU NIC to GKE Network mapping is required, and there is no default",
			Fix:     "list eight entries, " + listForm.binding("eth1", "<network>") + " through " + listForm.binding("eth8", "<network>") + ", naming this cluster's Device-type GKE Networks (`kubectl get networks` lists them)",
			Err:     ErrNoMapping})
		return Mapping{}, r.result()
	case seq.Kind != yaml.SequenceNode:
		r.errs = append(r.errs, &Error{Line: seq.Line, Entry: yamlKey,
			Problem: "must be a list, not " + kindWord(seq),
			Fix:     "write one entry per GPU NIC, each on its own line starting with '- ', e.g. - " + listForm.binding("eth1", "<network>")})
		return Mapping{}, r.result()
	}

	entries := make([]entry, len(seq.Content))
	for i, item := range seq.Content {
		entries[i] = r.binding(i, item)
	}
	m, errs := validate(entries, listForm, list.key.Line)
	r.errs = append(r.errs, errs...)
	if len(r.errs) > 0 {
		return Mapping{}, r.result()
	}
	return m, nil
}

// yamlReader walks the node tree by hand instead of decoding into structs:
// that way every problem has a line, duplicate keys are caught (decoding into
// a yaml.Node does not check them), and all problems are collected at once.
type yamlReader struct {
	errs []*Error
}

func (r *yamlReader) add(line int, entry, problem, fix string) {
	r.errs = append(r.errs, &Error{Line: line, Entry: entry, Problem: problem, Fix: fix})
}

// result orders the problems by line, keeping the order they were found in
// within a line, so that the report reads top to bottom like the file.
func (r *yamlReader) result() error {
	slices.SortStableFunc(r.errs, func(a, b *Error) int { return cmp.Compare(a.Line, b.Line) })
	return joinErrors(r.errs)
}

type field struct{ key, value *yaml.Node }

// fields reads a mapping's keys, reporting keys that are not plain names,
// appear twice or are not in allowed. The first of duplicate keys is used, so
// that the rest of the document is still checked.
func (r *yamlReader) fields(n *yaml.Node, path string, allowed []string) map[string]field {
	out := map[string]field{}
	firstLine := map[string]int{}
	where := path
	if where == "" {
		where = "the document"
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := deref(n.Content[i])
		if k.Kind != yaml.ScalarNode {
			r.add(k.Line, where, "has a key that is "+kindWord(k)+", not a name",
				"write the keys as plain names: "+strings.Join(allowed, ", "))
			continue
		}
		name := k.Value
		p := joinPath(path, name)
		if line, dup := firstLine[name]; dup {
			r.add(k.Line, show(p), fmt.Sprintf("is defined twice (first at line %d)", line),
				"delete one of the two; YAML tools disagree on which one wins, so the document must not rely on either")
			continue
		}
		firstLine[name] = k.Line
		if !slices.Contains(allowed, name) {
			r.add(k.Line, show(p), "is not a known field", unknownFieldFix(name, allowed, where))
			continue
		}
		out[name] = field{key: k, value: n.Content[i+1]}
	}
	return out
}

// binding reads one list entry; problems that make it unusable mark it
// skipped so that validate does not report them a second time.
func (r *yamlReader) binding(i int, n *yaml.Node) entry {
	path := fmt.Sprintf("%s[%d]", yamlKey, i)
	n = deref(n)
	e := entry{where: path, line: n.Line, netLine: n.Line}
	if n.Kind != yaml.MappingNode {
		r.add(n.Line, path, "must be a mapping, not "+kindWord(n), "write it as - "+suggestBinding(n))
		e.skip = true
		return e
	}
	fs := r.fields(n, path, bindingFields)
	if f, ok := fs["interfaceName"]; !ok {
		r.add(n.Line, path, "has no interfaceName", "add interfaceName: eth<1-8>, the GPU NIC this entry binds")
		e.skip = true
	} else if e.iface, ok = r.text(f, path+".interfaceName"); !ok {
		e.skip = true
	} else {
		e.line = f.key.Line
	}
	if f, ok := fs["network"]; !ok {
		r.add(n.Line, path, "has no network", "add network: <network>; "+findNetwork)
		e.noNetwork = true
	} else if e.network, ok = r.text(f, path+".network"); !ok {
		e.noNetwork = true
	} else {
		e.netLine = f.key.Line
	}
	return e
}

// suggestBinding writes the mapping an entry most likely meant: a scalar
// written in Parse's notation ("eth3=net-3") or naming only a GPU NIC keeps
// what is valid of it, so the fix can be copied back.
func suggestBinding(n *yaml.Node) string {
	iface, network := "eth<1-8>", "<network>"
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		i, net, _ := strings.Cut(n.Value, "=")
		iface, network = ifaceOrPlaceholder(strings.TrimSpace(i)), networkOrPlaceholder(strings.TrimSpace(net))
	}
	return listForm.binding(iface, network)
}

// text reads a string value. Only plain or quoted strings are accepted: a
// value YAML reads as a number, a boolean or a date is a string only by
// accident of spelling, and other YAML readers (sigs.k8s.io/yaml, used by
// kubectl) would reject or convert it. Null reads as "", which validate
// reports as a missing value.
func (r *yamlReader) text(f field, path string) (string, bool) {
	v := deref(f.value)
	if v.Kind == yaml.ScalarNode {
		switch v.ShortTag() {
		case "!!str":
			return v.Value, true
		case "!!null":
			return "", true
		}
	}
	fix := "write a single name"
	if v.Kind == yaml.ScalarNode {
		fix = "quote the value if it is meant as a name, e.g. " + f.key.Value + ": " + quoted(v.Value)
	}
	r.add(v.Line, show(path), "must be a string, not "+kindWord(v), fix)
	return "", false
}

// deref resolves an alias to the node it names. yaml.v3 never chains
// aliases, so one step is enough; a nil result cannot occur for a parsed tree
// but is mapped to an empty node so that callers need no check.
func deref(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	}
	return n
}

var tagWords = map[string]string{
	"!!str": "a string", "!!int": "a number", "!!float": "a number", "!!bool": "true/false",
	"!!null": "empty", "!!timestamp": "a date", "!!binary": "binary data",
}

// kindWord names a node's kind in a YAML user's terms.
func kindWord(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if w, ok := tagWords[n.ShortTag()]; ok {
			return w
		}
		return "a value tagged " + show(n.ShortTag())
	}
	return "an unexpected node"
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// unknownFieldFix suggests the field a misspelt key most likely meant.
func unknownFieldFix(name string, allowed []string, where string) string {
	list := "the fields of " + where + " are " + andList(allowed)
	if name == "<<" {
		return "merge keys are not supported: write the fields out; " + list
	}
	if s := closest(name, allowed); s != "" {
		return "did you mean " + s + "? " + list
	}
	return "remove it, or correct its name; " + list
}

// closest returns the allowed name that name most likely misspells: the same
// letters in another case, a prefix either way ("interface"), or at most two
// edits away; "" when none is close.
func closest(name string, allowed []string) string {
	lower := strings.ToLower(name)
	best, bestDist := "", 3
	for _, a := range allowed {
		la := strings.ToLower(a)
		if lower == la || len(lower) >= 3 && (strings.HasPrefix(la, lower) || strings.HasPrefix(lower, la)) {
			return a
		}
		if d := editDistance(lower, la); d < bestDist {
			best, bestDist = a, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance; the inputs are map keys a user
// typed, so bound them to keep a pathological key cheap.
func editDistance(a, b string) int {
	const limit = 64
	if len(a) > limit || len(b) > limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func emptyDocument(line int) error {
	return &Error{Line: line, Entry: "the document",
		Problem: "holds no data; a GPU NIC to GKE Network mapping is required, and there is no default, because the Network names differ per cluster",
		Fix:     "write " + yamlShape + ", naming this cluster's Device-type GKE Networks (`kubectl get networks` lists them)",
		Err:     ErrNoMapping}
}

var yamlLinePrefix = regexp.MustCompile(`^(?:yaml: )?(?:line (\d+): )?`)

// syntaxHints maps fragments of yaml.v3 syntax errors to advice; the first
// match wins.
var syntaxHints = []struct{ fragment, fix string }{
	{"tab character", "indent with spaces; YAML does not allow tabs in indentation"},
	{"cannot start any token", "indent with spaces if this line starts with a tab, or quote the value if it starts with a character YAML reserves (@, `, %, !, &, *, |, >)"},
	{"mapping values are not allowed", "quote the value if it contains ': ', and check this line's indentation"},
	{"did not find expected ',' or", "close the bracket or brace opened here, and separate entries with ','"},
	{"did not find expected key", "align this line with the other keys of its mapping, or start each list entry with '- '"},
}

// syntaxError rewords a yaml.v3 parse error. yaml.v3 reports parser errors
// (as opposed to scanner errors) one line early, and the message does not say
// which kind it is; so the line is found by parsing growing prefixes of the
// document until the same error first appears, which is where it is. The
// library's number is only the fallback when the scan's budget runs out.
func syntaxError(data []byte, err error) error {
	m := yamlLinePrefix.FindStringSubmatch(err.Error())
	reported, _ := strconv.Atoi(m[1])
	msg := err.Error()[len(m[0]):]
	line := syntaxErrorLine(data, msg)
	if line == 0 {
		line = reported
	}
	fix := "fix the YAML syntax; the document should be " + yamlShape
	for _, h := range syntaxHints {
		if strings.Contains(msg, h.fragment) {
			fix = h.fix
			break
		}
	}
	return &Error{Line: line, Entry: "the document", Problem: "is not valid YAML (" + msg + ")", Fix: fix, Err: err}
}

// syntaxScanBudget bounds the bytes syntaxErrorLine parses in total: the scan
// is quadratic in the document's length. A real document (under 1 KiB) is far
// inside it; a huge one gets the parser's own line number instead of a stall.
const syntaxScanBudget = 4 << 20

func syntaxErrorLine(data []byte, msg string) int {
	end, budget := 0, syntaxScanBudget
	for n := 1; end < len(data); n++ {
		if i := bytes.IndexByte(data[end:], '\n'); i < 0 {
			end = len(data)
		} else {
			end += i + 1
		}
		if budget -= end; budget < 0 {
			return 0
		}
		if err := parseAll(data[:end]); err != nil {
			if m := yamlLinePrefix.FindStringSubmatch(err.Error()); err.Error()[len(m[0]):] == msg {
				return n
			}
		}
	}
	return 0
}

// parseAll parses every document in b, so that the prefix scan also finds
// errors after a '---'.
func parseAll(b []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
