package runtimes

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated/tcpxo"
	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
)

// Pins are the extracted facts the builders consume. GeneratedPins reads
// the constants compiled into this binary; the coupling check builds Pins
// from the committed generated file it parses, so it judges the tree it is
// pointed at rather than the one it was compiled from.
type Pins struct {
	PluginVersion  string
	InstallerImage string
	DaemonImage    string
	DaemonVersion  string
	NCCLVersion    string
	LibDir         string
	// Profiles by name (ProfileDefault, ProfileSimple), in export order.
	Profiles map[string][]bom.EnvVar
	// Contextual names profile variables whose value depends on the
	// environment the profile is sourced into.
	Contextual []string

	// Image facts the components and the benchmark are built from.
	CUDAVersion         string   // CUDA_VERSION of the installer image
	InstallerEntrypoint []string // the installer image's entrypoint
	SSHDPort            int      // the port the installer image's sshd listens on
	AllReducePerfMPI    string   // the MPI build of all_reduce_perf in the installer image
	DaemonEntrypoint    []string // the daemon image's entrypoint (interpreter and script)

	// GuestRules are the installer's guest config checker rules by profile
	// name: what every check that judges env holds the env to.
	GuestRules map[string][]guestconfig.Rule
}

// GeneratedPins are the pins of generated/tcpxo.
func GeneratedPins() Pins {
	return Pins{
		PluginVersion:  tcpxo.PluginVersion,
		InstallerImage: tcpxo.InstallerImage,
		DaemonImage:    tcpxo.DaemonImage,
		DaemonVersion:  tcpxo.DaemonVersion,
		NCCLVersion:    tcpxo.NCCLVersion,
		LibDir:         tcpxo.LibDir,
		Profiles: map[string][]bom.EnvVar{
			ProfileDefault: envOf(tcpxo.DefaultProfile()),
			ProfileSimple:  envOf(tcpxo.SimpleProfile()),
		},
		Contextual:          tcpxo.NormalizedVariables(),
		CUDAVersion:         tcpxo.CUDAVersion,
		InstallerEntrypoint: tcpxo.InstallerEntrypoint(),
		SSHDPort:            tcpxo.SSHDPort,
		AllReducePerfMPI:    tcpxo.AllReducePerfMPI,
		DaemonEntrypoint:    tcpxo.DaemonEntrypoint(),
		GuestRules: map[string][]guestconfig.Rule{
			ProfileDefault: rulesOf(tcpxo.DefaultGuestRules()),
			ProfileSimple:  rulesOf(tcpxo.SimpleGuestRules()),
		},
	}
}

func rulesOf(rules []tcpxo.GuestRule) []guestconfig.Rule {
	out := make([]guestconfig.Rule, len(rules))
	for i, r := range rules {
		out[i] = guestconfig.Rule{Name: r.Name, Value: r.Value, Policy: guestconfig.Policy(r.Policy)}
	}
	return out
}

func envOf(vars []tcpxo.EnvVar) []bom.EnvVar {
	out := make([]bom.EnvVar, len(vars))
	for i, v := range vars {
		out[i] = bom.EnvVar{Name: v.Name, Value: v.Value}
	}
	return out
}

// guestConfigVar is how a profile points the guest config checker at its
// rules file.
const guestConfigVar = "NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE"

// RulesFor returns the guest config rules that hold for a container with
// env: those of the profile whose checker file env points at, the default
// profile's when env names none (the checker still runs with the installed
// default), and the default's too for a file no profile uses, which the
// fabric rule set then reports as a changed setting.
func (p Pins) RulesFor(env []corev1.EnvVar) []guestconfig.Rule {
	i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == guestConfigVar })
	if i >= 0 {
		for name, prof := range p.Profiles {
			if slices.ContainsFunc(prof, func(v bom.EnvVar) bool { return v.Name == guestConfigVar && v.Value == env[i].Value }) {
				return p.GuestRules[name]
			}
		}
	}
	return p.GuestRules[ProfileDefault]
}
