// Package kubeconfig loads a command's cluster configuration the way kubectl
// does, for every tcpxogen command that talks to a cluster (validate,
// discover, check cluster): one loader, one set of messages.
package kubeconfig

import (
	"errors"
	"fmt"
	"io/fs"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tcpxogen/tcpxogen/internal/inputfile"
)

// InputError marks a configuration only the user can fix (exit 2).
type InputError struct{ Err error }

func (e *InputError) Error() string  { return e.Err.Error() }
func (e *InputError) Unwrap() error  { return e.Err }
func (e *InputError) BadInput() bool { return true }

func badInput(format string, a ...any) error { return &InputError{fmt.Errorf(format, a...)} }

// Load reads the --kubeconfig file if given, else $KUBECONFIG or
// ~/.kube/config, else the pod's service account when running inside a
// cluster, with --context's context (default: the current one). what names
// the command's purpose in the message for no cluster at all ("no cluster
// to validate").
func Load(kubeconfig, kubeContext, userAgent, what string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	if err := check(rules); err != nil {
		return nil, err
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	cfg, err := cc.ClientConfig()
	switch {
	case clientcmd.IsEmptyConfig(err):
		return nil, badInput("no cluster to %s: no kubeconfig was found ($KUBECONFIG, ~/.kube/config) and this is not a pod with a service account; pass --kubeconfig FILE, set KUBECONFIG, or run inside the cluster", what)
	case err != nil:
		return nil, badInput("loading the cluster configuration: %w; check --kubeconfig (or KUBECONFIG) and --context", err)
	}
	cfg.UserAgent = userAgent
	return cfg, nil
}

// check puts the files client-go is about to read through the input helper
// first: client-go reads whatever it is given whole, so a FIFO would hang it
// and a device would exhaust memory. A missing file on the KUBECONFIG list
// is left to client-go, which skips it as kubectl does.
func check(rules *clientcmd.ClientConfigLoadingRules) error {
	paths := rules.GetLoadingPrecedence()
	if rules.ExplicitPath != "" {
		paths = []string{rules.ExplicitPath}
	}
	for _, p := range paths {
		err := inputfile.Check(p, inputfile.Spec{What: "kubeconfig", Max: inputfile.MaxKubeconfig})
		switch {
		case errors.Is(err, fs.ErrNotExist) && p != rules.ExplicitPath:
			continue
		case err != nil:
			return badInput("%w; check --kubeconfig (or KUBECONFIG)", err)
		}
	}
	return nil
}
