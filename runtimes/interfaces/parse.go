package interfaces

import (
	"fmt"
	"strings"
)

// Parse reads a TCPXO mapping written as comma-separated interface=network
// pairs, the form a command-line flag takes: TCPXO.Parse.
//
//	eth1=net-1,eth2=net-2,eth3=net-3,eth4=net-4,eth5=net-5,eth6=net-6,eth7=net-7,eth8=net-8
func Parse(s string) (Mapping, error) { return TCPXO.Parse(s) }

// Parse reads a mapping of the layout written as comma-separated
// interface=network pairs, the form a command-line flag takes. For TCPXO:
//
//	eth1=net-1,eth2=net-2,eth3=net-3,eth4=net-4,eth5=net-5,eth6=net-6,eth7=net-7,eth8=net-8
//
// and for RDMA, with the optional eth1 (here in Google's network names):
//
//	eth1=gvnic-1,eth2=rdma-0,eth3=rdma-1,eth4=rdma-2,eth5=rdma-3,eth6=rdma-4,eth7=rdma-5,eth8=rdma-6,eth9=rdma-7
//
// Pairs may come in any order; each binds the interface it names, never the
// one at its position. Whitespace around pairs and around '=' is ignored.
// Every problem found is reported, as *Error values joined with errors.Join:
// each pair's own problems in input order, then interfaces given more than
// once, interfaces missing and networks shared, each in NIC order.
func (l Layout) Parse(s string) (Mapping, error) {
	spec := l.spec()
	if strings.TrimSpace(s) == "" {
		return Mapping{}, &Error{
			Problem: spec.aNIC + " to GKE Network mapping is required; there is no default, because the Network names differ per cluster",
			Fix: "pass " + spec.pairSyntax() + ", one pair per " + spec.nicWord +
				spec.alsoOptional(func(iface string) string { return pairForm.binding(iface, "<network>") }) +
				", naming this cluster's Device-type GKE Networks (`kubectl get networks` lists them)",
			Err: spec.noMapping,
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
			example := spec.placeholder + "=<network>"
			if _, ok := spec.index(pair); ok {
				example = pair + "=<network>"
			}
			e.pre = []*Error{{Path: e.where, Problem: "has no '='",
				Fix: "write each pair as <interface>=<network>, here " + example}}
		default:
			e.iface, e.network = strings.TrimSpace(iface), strings.TrimSpace(network)
		}
		entries = append(entries, e)
	}
	m, errs := validate(l, entries, pairForm, 0)
	return m, joinErrors(errs)
}

// FromBindings builds a TCPXO Mapping from bindings a caller decoded itself:
// TCPXO.FromBindings.
func FromBindings(bs []Binding) (Mapping, error) { return TCPXO.FromBindings(bs) }

// FromBindings builds a Mapping of the layout from bindings a caller decoded
// itself, for example a recipe's configuration.gke.tcpxoInterfaces. The rules
// are Parse's; values are taken as given, without trimming, since a decoded
// document has already removed the whitespace that is syntax. Messages locate
// an entry by the layout's YAML key, as tcpxoInterfaces[i] or
// rdmaInterfaces[i] (0-based); callers with a longer path can wrap the error.
func (l Layout) FromBindings(bs []Binding) (Mapping, error) {
	spec := l.spec()
	if len(bs) == 0 {
		return Mapping{}, &Error{
			Path:    spec.yamlKey,
			Problem: "is empty; " + spec.aNIC + " to GKE Network mapping is required, and there is no default, because the Network names differ per cluster",
			Fix:     "list " + spec.listEntries("bindings") + ", naming this cluster's Device-type GKE Networks (`kubectl get networks` lists them)",
			Err:     spec.noMapping,
		}
	}
	entries := make([]entry, len(bs))
	for i, b := range bs {
		entries[i] = entry{where: fmt.Sprintf("%s[%d]", spec.yamlKey, i), iface: b.Interface, network: b.Network}
	}
	m, errs := validate(l, entries, spec.listForm(), 0)
	return m, joinErrors(errs)
}
