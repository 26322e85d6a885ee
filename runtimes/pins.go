package runtimes

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
)

// guestConfigVar is how a profile points the guest config checker at its
// rules file.
const guestConfigVar = "NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE"

// RulesFor returns the guest config rules that hold for a container with
// env: those of the profile whose checker file env points at, the default
// profile's (the first profile's: a gIB machine type's shares the one
// checker config) when env names none (the checker still runs with the installed
// default), and the default's too for a file no profile uses, which the
// fabric rule set then reports as a changed setting.
func RulesFor(f facts.Facts, env []corev1.EnvVar) []guestconfig.Rule {
	i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == guestConfigVar })
	if i >= 0 {
		for _, name := range f.ProfileNames() {
			prof, _ := f.Profile(name)
			if slices.ContainsFunc(prof, func(v facts.EnvVar) bool { return v.Name == guestConfigVar && v.Value == env[i].Value }) {
				return f.GuestRules(name)
			}
		}
	}
	return f.GuestRules(f.ProfileNames()[0])
}
