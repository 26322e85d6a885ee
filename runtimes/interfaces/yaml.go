package interfaces

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
)

// yamlKey is TCPXO's key of the binding list, in a standalone document and in
// a recipe's configuration.gke section alike.
const yamlKey = "tcpxoInterfaces"

// maxYAMLSize bounds what ParseYAML reads. A real document is under 1 KiB;
// the bound keeps a wrong path (a log, an image) from being parsed whole.
const maxYAMLSize = 1 << 20

// yamlDocument and yamlBinding are TCPXO's document shape, for the
// structural walk (yamlstrict.Walk); the entries are read from the nodes.
type yamlDocument struct {
	TcpxoInterfaces []yamlBinding `yaml:"tcpxoInterfaces"`
}

type yamlBinding struct {
	InterfaceName string `yaml:"interfaceName"`
	Network       string `yaml:"network"`
}

// ParseYAML reads a standalone TCPXO mapping document: TCPXO.ParseYAML.
func ParseYAML(data []byte) (Mapping, error) { return TCPXO.ParseYAML(data) }

// ParseYAML reads a standalone mapping document of the layout, its bindings
// listed under the layout's YAML key. For TCPXO:
//
//	tcpxoInterfaces:
//	  - {interfaceName: eth1, network: net-1}
//	  - {interfaceName: eth2, network: net-2}
//	  ...
//	  - {interfaceName: eth8, network: net-8}
//
// and for RDMA, with the optional eth1 (here in Google's network names):
//
//	rdmaInterfaces:
//	  - {interfaceName: eth1, network: gvnic-1}
//	  - {interfaceName: eth2, network: rdma-0}
//	  ...
//	  - {interfaceName: eth9, network: rdma-7}
//
// The other layout's key is refused, naming this layout's. It is strict,
// because a file edited by hand should fail loudly rather than be half-read:
// unknown fields, duplicate keys, values of the wrong type
// (write a network named like a number or true/false in quotes), a second
// document and an empty list are all rejected. The binding rules are Parse's;
// entries may be in any order. Every *Error carries the line it refers to
// (0 only for problems with the input as a whole, such as an empty or
// oversized document), and the errors are in line order. Callers add the file
// name when wrapping the error.
func (l Layout) ParseYAML(data []byte) (m Mapping, err error) {
	spec := l.spec()
	// Input must never crash the tool, even through a yaml.v3 bug.
	defer yamlstrict.Recover(func(problem string) {
		m, err = Mapping{}, &Error{Path: "the document", Problem: problem,
			Fix: "check that this is the mapping document you meant to load; it should be " + spec.yamlShape()}
	})
	if len(data) > maxYAMLSize {
		return Mapping{}, &Error{Path: "the document",
			Problem: fmt.Sprintf("is %d bytes, over the %d-byte limit for a mapping document", len(data), maxYAMLSize),
			Fix:     "check the path: the document should be " + spec.yamlShape()}
	}

	doc, err := yamlstrict.ParseDocument(data)
	var second *yamlstrict.SecondDocumentError
	switch {
	case errors.Is(err, yamlstrict.ErrNoDocument):
		return Mapping{}, emptyDocument(spec, 0)
	case errors.As(err, &second):
		return Mapping{}, &Error{Line: second.Line, Path: "a second YAML document", Problem: "starts here",
			Fix: "keep exactly one document: remove the '---' separator and what follows it"}
	case err != nil:
		return Mapping{}, syntaxError(spec, data, err)
	}
	root, ok := yamlstrict.Root(doc)
	if !ok {
		// Point at the null itself, which after a '---' line is below the
		// document's start.
		line := doc.Line
		if root != nil {
			line = root.Line
		}
		return Mapping{}, emptyDocument(spec, line)
	}
	root = deref(root)
	if root.Kind != yaml.MappingNode {
		fix := "write " + spec.yamlShape()
		if root.Kind == yaml.SequenceNode {
			fix = "put the list under the key " + spec.yamlKey + ":"
		}
		return Mapping{}, &Error{Line: root.Line, Path: "the document",
			Problem: "is " + kindWord(root) + ", not a mapping with the key " + spec.yamlKey, Fix: fix}
	}

	r := &yamlReader{spec: spec}
	r.keys(root)
	fields := fields(root)
	list, ok := fields[spec.yamlKey]
	if !ok {
		if !r.otherFabric {
			r.errs = append(r.errs, &Error{Line: root.Line, Path: spec.yamlKey,
				Problem: "is missing; " + spec.aNIC + " to GKE Network mapping is required, and there is no default, because the Network names differ per cluster",
				Fix:     "add " + spec.yamlShape() + ", naming this cluster's Device-type GKE Networks (`kubectl get networks` lists them)",
				Err:     spec.noMapping})
		}
		return Mapping{}, r.result()
	}
	seq := deref(list.value)
	switch {
	case seq.ShortTag() == "!!null" || seq.Kind == yaml.SequenceNode && len(seq.Content) == 0:
		r.errs = append(r.errs, &Error{Line: list.key.Line, Path: spec.yamlKey,
			Problem: "is empty; " + spec.aNIC + " to GKE Network mapping is required, and there is no default",
			Fix:     "list " + spec.listEntries("entries") + ", naming this cluster's Device-type GKE Networks (`kubectl get networks` lists them)",
			Err:     spec.noMapping})
		return Mapping{}, r.result()
	case seq.Kind != yaml.SequenceNode:
		r.errs = append(r.errs, &Error{Line: seq.Line, Path: spec.yamlKey,
			Problem: "must be a list, not " + kindWord(seq),
			Fix:     "write one entry per " + spec.nicWord + ", each on its own line starting with '- ', e.g. - " + spec.listForm().binding(spec.required()[0], "<network>")})
		return Mapping{}, r.result()
	}

	entries := make([]entry, len(seq.Content))
	for i, item := range seq.Content {
		entries[i] = r.binding(i, item)
	}
	m, errs := validate(l, entries, spec.listForm(), list.key.Line)
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
	spec *layoutSpec
	errs []*Error
	// otherFabric is set when the document carries another layout's key,
	// which keys reported; this layout's key is then not reported missing.
	otherFabric bool
}

func (r *yamlReader) add(line int, entry, problem, fix string) {
	r.errs = append(r.errs, &Error{Line: line, Path: entry, Problem: problem, Fix: fix})
}

// result orders the problems by line, keeping the order they were found in
// within a line, so that the report reads top to bottom like the file.
func (r *yamlReader) result() error {
	slices.SortStableFunc(r.errs, func(a, b *Error) int { return cmp.Compare(a.Line, b.Line) })
	return joinErrors(r.errs)
}

type field struct{ key, value *yaml.Node }

// keys reports every key of the document that is not a plain name, appears
// twice or is not a field; values of the wrong kind are binding's and
// text's to word.
func (r *yamlReader) keys(root *yaml.Node) {
	for _, f := range yamlstrict.Walk(root, r.spec.docType, yamlstrict.WalkOptions{FollowAliases: true}) {
		where := yamlstrict.ParentPath(f.Path)
		if f.Kind == yamlstrict.KeyNotAName {
			where = f.Path
		}
		if where == "" {
			where = "the document"
		}
		switch f.Kind {
		case yamlstrict.KeyNotAName:
			r.add(f.Line, where, "has a key that is "+kindWord(f.Node)+", not a name",
				"write the keys as plain names: "+strings.Join(yamlstrict.Fields(f.Want), ", "))
		case yamlstrict.DuplicateKey:
			r.add(f.Line, show(f.Path), fmt.Sprintf("is defined twice (first at line %d)", f.First),
				"delete one of the two; YAML tools disagree on which one wins, so the document must not rely on either")
		case yamlstrict.UnknownKey:
			if other, ok := otherLayout(f.Path); ok {
				r.otherFabric = true
				r.add(f.Line, f.Path, "is not read here: this is a "+other.fabric+" mapping; the "+r.spec.fabric+" fabric reads "+r.spec.yamlKey,
					"for "+r.spec.hardware+", write "+r.spec.yamlShape()+"; for "+other.hardware+", give this file with "+other.fabricFlag)
				continue
			}
			r.add(f.Line, show(f.Path), "is not a known field", yamlstrict.UnknownFieldFix(f.Node.Value, yamlstrict.Fields(f.Want), where, "and"))
		}
	}
}

// otherLayout returns the layout whose YAML key path is, if it is a top-level
// key: a document of another fabric.
func otherLayout(path string) (*layoutSpec, bool) {
	for _, spec := range layouts {
		if spec != nil && spec.yamlKey == path {
			return spec, true
		}
	}
	return nil, false
}

// fields returns a mapping's known keys with their values, the first of
// duplicates; keys has reported the rest.
func fields(n *yaml.Node) map[string]field {
	out := map[string]field{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := deref(n.Content[i])
		if _, seen := out[k.Value]; k.Kind == yaml.ScalarNode && !seen {
			out[k.Value] = field{key: k, value: n.Content[i+1]}
		}
	}
	return out
}

// binding reads one list entry; problems that make it unusable mark it
// skipped so that validate does not report them a second time.
func (r *yamlReader) binding(i int, n *yaml.Node) entry {
	path := yamlstrict.IndexPath(r.spec.yamlKey, i)
	n = deref(n)
	e := entry{where: path, line: n.Line, netLine: n.Line}
	if n.Kind != yaml.MappingNode {
		r.add(n.Line, path, "must be a mapping, not "+kindWord(n), "write it as - "+suggestBinding(r.spec, n))
		e.skip = true
		return e
	}
	fs := fields(n)
	if f, ok := fs["interfaceName"]; !ok {
		r.add(n.Line, path, "has no interfaceName", "add interfaceName: "+r.spec.placeholder+", the "+r.spec.nicWord+" this entry binds"+r.spec.orOptional())
		e.skip = true
	} else if e.iface, ok = r.text(f, path+".interfaceName"); !ok {
		e.skip = true
	} else {
		e.line = f.key.Line
	}
	if f, ok := fs["network"]; !ok {
		r.add(n.Line, path, "has no network", "add network: <network>; "+r.spec.findNetwork())
		e.noNetwork = true
	} else if e.network, ok = r.text(f, path+".network"); !ok {
		e.noNetwork = true
	} else {
		e.netLine = f.key.Line
	}
	return e
}

// suggestBinding writes the mapping an entry most likely meant: a scalar
// written in Parse's notation ("eth3=net-3") or naming only a NIC of the
// layout keeps what is valid of it, so the fix can be copied back.
func suggestBinding(spec *layoutSpec, n *yaml.Node) string {
	iface, network := spec.placeholder, "<network>"
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		i, net, _ := strings.Cut(n.Value, "=")
		iface, network = ifaceOrPlaceholder(spec, strings.TrimSpace(i)), networkOrPlaceholder(strings.TrimSpace(net))
	}
	return spec.listForm().binding(iface, network)
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

// kindWord names a node's kind in a YAML user's terms; a network name is "a
// string" here.
func kindWord(n *yaml.Node) string { return yamlstrict.KindWord(n, "a string", show) }

func emptyDocument(spec *layoutSpec, line int) error {
	return &Error{Line: line, Path: "the document",
		Problem: "holds no data; " + spec.aNIC + " to GKE Network mapping is required, and there is no default, because the Network names differ per cluster",
		Fix:     "write " + spec.yamlShape() + ", naming this cluster's Device-type GKE Networks (`kubectl get networks` lists them)",
		Err:     spec.noMapping}
}

// syntaxError rewords a yaml.v3 syntax error from ParseDocument, with the
// line it is really on (yaml.v3's own number can be a line early).
func syntaxError(spec *layoutSpec, data []byte, err error) error {
	e := yamlstrict.SyntaxError(data, err, yamlstrict.ParseAll, yamlstrict.SyntaxHints, "fix the YAML syntax; the document should be "+spec.yamlShape())
	e.Path = "the document"
	return e
}

// ValuesYAML is the document its layout's ParseYAML reads, for m, its
// bindings under the layout's key: what `tcpxogen discover -o values` writes
// for `render runtime --values`. "" for the zero Mapping.
func (m Mapping) ValuesYAML() string {
	if m.IsZero() {
		return ""
	}
	var b strings.Builder
	b.WriteString(m.layout.spec().yamlKey + ":\n")
	for _, bd := range m.Bindings() {
		fmt.Fprintf(&b, "  - {interfaceName: %s, network: %q}\n", bd.Interface, bd.Network)
	}
	return b.String()
}
