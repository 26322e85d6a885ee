package docgen

import (
	"fmt"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes"
)

// Markers delimit a generated section inside a hand-written page.
func begin(name string) string {
	return "<!-- BEGIN GENERATED " + name + ": tcpxogen render goldens; DO NOT EDIT -->"
}
func end(name string) string { return "<!-- END GENERATED " + name + " -->" }

// Splice replaces the body of the generated section name in doc. A page
// that lost its markers is an error, never a silently stale section.
func Splice(doc []byte, name string, body string) ([]byte, error) {
	s := string(doc)
	b, e := begin(name), end(name)
	i, j := strings.Index(s, b), strings.Index(s, e)
	if i < 0 || j < i {
		return nil, fmt.Errorf("generated section %q: markers %q ... %q not found in order: restore them", name, b, e)
	}
	return []byte(s[:i+len(b)] + "\n" + strings.TrimRight(body, "\n") + "\n" + s[j:]), nil
}

// WiringReference renders the reference table of the shipped wiring.
func WiringReference(rows []runtimes.RefRow) string {
	var b strings.Builder
	b.WriteString("| kind | name | value | why |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", r.Kind, r.Name, cell(r.Value), escape(r.Why))
	}
	return b.String()
}

// RuleRow is one row of a guide's table of variables: the rule set's entry,
// and where the shipped value differs between the machine types one table
// covers (gIB's tuner config), each machine type's value instead of
// Entry.Value.
type RuleRow struct {
	fabric.Entry
	PerMachine []MachineValue
}

// MachineValue is a shipped value on one machine type.
type MachineValue struct{ MachineType, Value string }

// Rows are the rows of entries, one value each.
func Rows(entries []fabric.Entry) []RuleRow {
	out := make([]RuleRow, len(entries))
	for i, e := range entries {
		out[i] = RuleRow{Entry: e}
	}
	return out
}

// FabricRules is a guide's table of what a workload may tune, from a
// fabric's rule set (rs) applied to the shipped env and the installer's
// guest config: one row per variable, then the classes explained as rs
// explains them.
func FabricRules(rs *fabric.RuleSet, rows []RuleRow) string {
	var b strings.Builder
	b.WriteString("| variable | shipped value | may a workload change it? | why |\n|---|---|---|---|\n")
	for _, e := range rows {
		verdict := "yes"
		switch {
		case e.Class.MustNotTouch():
			verdict = "**no** (" + e.Class.String() + ")"
		case e.Class != fabric.ClassLogging && e.Class != fabric.ClassOther:
			verdict = "with care (" + e.Class.String() + ")"
		}
		name := "`" + e.Name + "`"
		if strings.Contains(e.Name, " ") {
			name = escape(e.Name)
		}
		value := cell(e.Value)
		if len(e.PerMachine) > 0 {
			per := make([]string, len(e.PerMachine))
			for i, m := range e.PerMachine {
				per[i] = m.MachineType + ": " + cell(m.Value)
			}
			value = strings.Join(per, "; ")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, value, verdict, escape(e.Why))
	}
	b.WriteString("\n")
	for _, c := range fabric.Classes {
		fmt.Fprintf(&b, "- **%s**: %s\n", c, escape(rs.ClassDoc(c)))
	}
	return b.String()
}

func cell(v string) string {
	if v == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(v, "|", `\|`) + "`"
}

// YAMLBlock fences a manifest for a page; the docs test exercises it.
func YAMLBlock(manifest []byte) string {
	return "```yaml\n" + strings.TrimRight(string(manifest), "\n") + "\n```"
}
