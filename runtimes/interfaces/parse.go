package interfaces

import (
	"fmt"
	"strings"
)

// pairSyntax is the expected form of Parse's input, for messages.
const pairSyntax = "eth1=<network>,eth2=<network>,...,eth8=<network>"

// Parse reads a mapping written as comma-separated interface=network pairs,
// the form a command-line flag takes:
//
//	eth1=net-1,eth2=net-2,eth3=net-3,eth4=net-4,eth5=net-5,eth6=net-6,eth7=net-7,eth8=net-8
//
// Pairs may come in any order; each binds the interface it names, never the
// one at its position. Whitespace around pairs and around '=' is ignored.
// Every problem found is reported, as *Error values joined with errors.Join:
// each pair's own problems in input order, then interfaces given more than
// once, interfaces missing and networks shared, each in eth1..eth8 order.
func Parse(s string) (Mapping, error) {
	if strings.TrimSpace(s) == "" {
		return Mapping{}, &Error{
			Problem: "a GPU NIC to GKE Network mapping is required; there is no default, because the Network names differ per cluster",
			Fix:     "pass " + pairSyntax + ", one pair per GPU NIC, naming this cluster's Device-type GKE Networks (`kubectl get networks` lists them)",
			Err:     ErrNoMapping,
		}
	}
	var entries []entry
	for i, raw := range strings.Split(s, ",") {
		pair := strings.TrimSpace(raw)
		// The pair's text goes into its name so that "mapped twice" and
		// similar messages show which pairs they mean without counting.
		e := entry{where: fmt.Sprintf("pair %d", i+1)}
		if pair != "" {
			e.where += " " + quoted(pair)
		}
		iface, network, found := strings.Cut(pair, "=")
		switch {
		case pair == "":
			e.skip = true
			e.pre = []*Error{{Path: e.where, Problem: "is empty",
				Fix: "remove the extra ','; pairs are separated by single commas, with none at either end"}}
		case !found:
			e.skip = true
			example := "eth<1-8>=<network>"
			if _, ok := gpuIndex(pair); ok {
				example = pair + "=<network>"
			}
			e.pre = []*Error{{Path: e.where, Problem: "has no '='",
				Fix: "write each pair as <interface>=<network>, here " + example}}
		default:
			e.iface, e.network = strings.TrimSpace(iface), strings.TrimSpace(network)
		}
		entries = append(entries, e)
	}
	m, errs := validate(entries, pairForm, 0)
	return m, joinErrors(errs)
}

// FromBindings builds a Mapping from bindings a caller decoded itself, for
// example a recipe's configuration.gke.tcpxoInterfaces. The rules are Parse's;
// values are taken as given, without trimming, since a decoded document has
// already removed the whitespace that is syntax. Messages locate an entry as
// tcpxoInterfaces[i] (0-based); callers with a longer path can wrap the error.
func FromBindings(bs []Binding) (Mapping, error) {
	if len(bs) == 0 {
		return Mapping{}, &Error{
			Path:    yamlKey,
			Problem: "is empty; a GPU NIC to GKE Network mapping is required, and there is no default, because the Network names differ per cluster",
			Fix:     "list eight bindings, " + listForm.binding("eth1", "<network>") + " through " + listForm.binding("eth8", "<network>") + ", naming this cluster's Device-type GKE Networks (`kubectl get networks` lists them)",
			Err:     ErrNoMapping,
		}
	}
	entries := make([]entry, len(bs))
	for i, b := range bs {
		entries[i] = entry{where: fmt.Sprintf("%s[%d]", yamlKey, i), iface: b.Interface, network: b.Network}
	}
	m, errs := validate(entries, listForm, 0)
	return m, joinErrors(errs)
}
