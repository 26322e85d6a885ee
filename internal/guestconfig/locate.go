package guestconfig

// prototext reports positions only for its own errors, and dynamicpb keeps
// none, so the lines of rules (for duplicate or missing-policy errors and
// for Rule.Line) come from this scanner. It runs only on text prototext has
// accepted against the descriptor, whose one top-level field is the
// repeated message env_var and whose EnvVar fields are all scalars: every
// message opened at the top level, or inside a top-level [...] list, is one
// env_var, in the order the parser lists them. Parse checks that the counts
// agree, so a construct this scanner misses is an error, not a wrong line.

// place is where one env_var rule sits in the file.
type place struct {
	start         int  // line of the rule's opening { or <
	nameLine      int  // line of its name field; 0 when absent
	policyLine    int  // line of its check_policy field; 0 when absent
	policyNumeric bool // check_policy is written as a number
}

// line is the rule's line: its name field, where a reader looks for the
// variable, or else its opening brace.
func (p place) line() int {
	if p.nameLine > 0 {
		return p.nameLine
	}
	return p.start
}

// token kinds of the scanner.
const (
	tokIdent = iota
	tokNumber
	tokString
	tokPunct
)

type token struct {
	kind int
	text string // identifiers only
	b    byte   // punctuation only
	line int
}

// tokens splits text-format input into tokens, dropping comments and white
// space. It accepts any input and always advances.
func tokens(data []byte) []token {
	var out []token
	line := 1
	for i := 0; i < len(data); {
		c := data[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f':
			i++
		case c == '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			// A string ends at its unescaped quote; text format strings
			// cannot span lines, so a newline ends it too.
			out = append(out, token{kind: tokString, line: line})
			i++
			for i < len(data) && data[i] != c && data[i] != '\n' {
				if data[i] == '\\' && i+1 < len(data) && data[i+1] != '\n' {
					i++
				}
				i++
			}
			if i < len(data) && data[i] == c {
				i++
			}
		case isIdentStart(c):
			j := i
			for j < len(data) && (isIdentStart(data[j]) || isDigit(data[j])) {
				j++
			}
			out = append(out, token{kind: tokIdent, text: string(data[i:j]), line: line})
			i = j
		case isDigit(c) || c == '-' || c == '.' || c == '+':
			j := i + 1
			for j < len(data) && (isIdentStart(data[j]) || isDigit(data[j]) || data[j] == '.' || data[j] == '-' || data[j] == '+') {
				j++
			}
			out = append(out, token{kind: tokNumber, line: line})
			i = j
		default:
			out = append(out, token{kind: tokPunct, b: c, line: line})
			i++
		}
	}
	return out
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool      { return c >= '0' && c <= '9' }

// locate returns the place of every env_var rule, in file order.
func locate(data []byte) []place {
	var places []place
	depth := 0
	// Inside a rule (depth 1): a field is a name, an optional ':', then one
	// value token (adjacent strings concatenate), then an optional ',' or ';'.
	const (
		wantName = iota
		wantValue
		afterValue
	)
	state := wantName
	field, fieldLine := "", 0
	for _, t := range tokens(data) {
		if t.kind == tokPunct && (t.b == '{' || t.b == '<') {
			if depth == 0 {
				places = append(places, place{start: t.line})
			}
			depth++
			state = wantName
			continue
		}
		if t.kind == tokPunct && (t.b == '}' || t.b == '>') {
			if depth > 0 {
				depth--
			}
			state = wantName
			continue
		}
		if depth != 1 || len(places) == 0 {
			continue
		}
		cur := &places[len(places)-1]
		switch {
		case state == afterValue && t.kind == tokString:
			// concatenation of adjacent strings: still the same value
		case state == afterValue && t.kind == tokPunct && (t.b == ',' || t.b == ';'):
			state = wantName
		case state == wantValue && t.kind == tokPunct && t.b == ':':
		case state == wantValue:
			switch field {
			case "name":
				cur.nameLine = fieldLine
			case "check_policy":
				cur.policyLine = fieldLine
				cur.policyNumeric = t.kind == tokNumber
			}
			state = afterValue
		case t.kind == tokIdent: // a field name, in wantName or right after a value
			field, fieldLine = t.text, t.line
			state = wantValue
		}
	}
	return places
}
