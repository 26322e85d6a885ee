// Package factpins turns extracted facts into the pins the runtime builders
// consume. Commands that judge a tree (check, sbom) parse its committed
// generated file and build from these pins, not from constants compiled
// into the binary. It lives apart from emit so the extract path never links
// the builders (and through them generated/).
package factpins

import (
	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/facts"
)

// FromFacts returns the builder pins of f.
func FromFacts(f *facts.Facts) runtimes.Pins {
	return runtimes.Pins{
		PluginVersion:  f.PluginVersion,
		InstallerImage: f.InstallerImage,
		DaemonImage:    f.DaemonImage,
		DaemonVersion:  f.DaemonVersion,
		NCCLVersion:    f.NCCLVersion,
		LibDir:         f.LibDir,
		Profiles: map[string][]bom.EnvVar{
			runtimes.ProfileDefault: env(f.DefaultProfile),
			runtimes.ProfileSimple:  env(f.SimpleProfile),
		},
		Contextual:          f.Normalized,
		CUDAVersion:         f.CUDAVersion,
		InstallerEntrypoint: f.InstallerEntrypoint,
		SSHDPort:            f.SSHDPort,
		AllReducePerfMPI:    f.AllReducePerfMPI,
		DaemonEntrypoint:    f.DaemonEntrypoint,
		GuestRules: map[string][]guestconfig.Rule{
			runtimes.ProfileDefault: rules(f.DefaultGuestRules),
			runtimes.ProfileSimple:  rules(f.SimpleGuestRules),
		},
	}
}

func rules(rs []facts.GuestRule) []guestconfig.Rule {
	out := make([]guestconfig.Rule, len(rs))
	for i, r := range rs {
		out[i] = guestconfig.Rule{Name: r.Name, Value: r.Value, Policy: guestconfig.Policy(r.Policy)}
	}
	return out
}

func env(vs []facts.EnvVar) []bom.EnvVar {
	out := make([]bom.EnvVar, len(vs))
	for i, v := range vs {
		out[i] = bom.EnvVar{Name: v.Name, Value: v.Value}
	}
	return out
}
