package bom

import (
	"fmt"
	"maps"
	"slices"

	"github.com/tcpxogen/tcpxogen/internal/facts"
)

// PublishedDifference is one variable on which the release notes' published
// NCCL list and the installer's default profile disagree.
type PublishedDifference struct {
	Name                   string
	Published, Profile     string
	InPublished, InProfile bool
	// Decision is the reviewed decision in force for the installer, nil
	// when none is recorded in bom/overrides.yaml.
	Decision *Override
}

func (d PublishedDifference) String() string {
	return fmt.Sprintf("%s: published %s, profile %s", d.Name, show(d.Published, d.InPublished), show(d.Profile, d.InProfile))
}

// PublishedDifferences compares cfg (the published list, its lib directory
// replaced by the workload's) with g's default profile, by name, and finds
// each difference's decision in o: the one rule bom-check, bump and review
// apply.
func PublishedDifferences(cfg NCCLConfig, g *facts.Facts, o *Overrides) []PublishedDifference {
	published := map[string]string{}
	for _, e := range cfg.EnvIn(g.LibDir) {
		published[e.Name] = e.Value
	}
	profile := map[string]string{}
	for _, e := range g.DefaultProfile {
		profile[e.Name] = e.Value
	}
	var out []PublishedDifference
	names := slices.AppendSeq(slices.Collect(maps.Keys(published)), maps.Keys(profile))
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		pv, inPub := published[name]
		xv, inProf := profile[name]
		if inPub && inProf && pv == xv {
			continue
		}
		d := PublishedDifference{Name: name, Published: pv, Profile: xv, InPublished: inPub, InProfile: inProf}
		if o != nil {
			if ov, ok := o.Decision(name, g.PluginVersion); ok {
				d.Decision = &ov
			}
		}
		out = append(out, d)
	}
	return out
}

func show(v string, ok bool) string {
	if !ok {
		return "unset"
	}
	return fmt.Sprintf("%q", v)
}
