package extract

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
	"github.com/tcpxogen/tcpxogen/internal/imagefs"
)

// The guest config checker files, one per profile, in the plugin layer.
const (
	DefaultGuestConfigPath = PluginDir + "/a3plus_guest_config.textproto"
	SimpleGuestConfigPath  = PluginDir + "/a3plus_guest_config_simple.textproto"
	// guestConfigVar is how a profile points the checker at its file.
	guestConfigVar = "NCCL_SHIMNET_GUEST_CONFIG_CHECKER_CONFIG_FILE"
)

// guestRules parses the guest config the profile points the checker at,
// checks it is the file read from p, and checks the profile itself keeps
// every enforced rule: an installer whose own profile breaks its checker is
// something tcpxogen must not pin silently.
func guestRules(rs *fabric.RuleSet, scan *imagefs.Result, p, profileName string, profile []facts.EnvVar) ([]guestconfig.Rule, string, error) {
	f := scan.Files[p]
	for _, v := range profile {
		if v.Name == guestConfigVar && path.Base(v.Value) != path.Base(p) {
			return nil, "", fmt.Errorf("%s points the guest config checker at %s, but tcpxogen reads %s for it: a renamed checker file needs a tcpxogen change", profileName, v.Value, p)
		}
	}
	rules, err := guestconfig.Parse(p, f.Data)
	if err != nil {
		return nil, "", err
	}
	env := make([]corev1.EnvVar, len(profile))
	for i, v := range profile {
		env[i] = corev1.EnvVar{Name: v.Name, Value: v.Value}
	}
	var errs []error
	for _, finding := range rs.Check(env, rules, env) {
		if finding.Severity == fabric.Fatal {
			errs = append(errs, fmt.Errorf("%s contradicts %s: %s", profileName, p, finding.Reason))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, "", err
	}
	// A rule's line locates it in the file read; it is not a fact, and
	// the generated file does not record it.
	for i := range rules {
		rules[i].Line = 0
	}
	sum := sha256.Sum256(f.Data)
	return rules, hex.EncodeToString(sum[:]), nil
}
