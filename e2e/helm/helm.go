// Package helm drives tcpxogen's Helm charts (deploy/helm/<fabric>, written
// by `go generate ./...`) through Helm's own Go SDK, as the helm CLI does:
// the chart loader, the install action client-side (`helm template`) and
// against a control plane (`helm install`), uninstall and lint. It builds
// only with trainer-v2.3.0.mod (e2e/go.mod ignores this directory): Helm
// v4.2 is built on the Kubernetes 1.36 modules of that control plane.
package helm

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// ReleaseName is the release `helm template` renders, and the TCPXO
// scenarios install.
const ReleaseName = "tcpxo"

// ChartDir is the committed chart of fabric under the checkout root.
func ChartDir(root, fabric string) string {
	return filepath.Join(root, "deploy", "helm", fabric)
}

// Load reads a chart directory with Helm's loader.
func Load(dir string) (*chart.Chart, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart %s: %w", dir, err)
	}
	return ch, nil
}

// quiet is a configuration whose log goes nowhere (Helm logs every step).
func quiet() *action.Configuration {
	return action.NewConfiguration(action.ConfigurationSetLogger(slog.NewTextHandler(io.Discard, nil)))
}

// Template renders ch as `helm template --namespace namespace` does:
// client-side, with the values schema checked, and returns the manifest.
func Template(ch *chart.Chart, namespace string, vals map[string]any) (string, error) {
	inst := action.NewInstall(quiet())
	inst.DryRunStrategy = action.DryRunClient
	inst.ReleaseName = ReleaseName
	inst.Namespace = namespace
	inst.Replace = true
	rel, err := inst.Run(ch, vals)
	if err != nil {
		return "", err
	}
	r, err := v1(rel)
	if err != nil {
		return "", err
	}
	return r.Manifest, nil
}

// Cluster is a control plane Helm reaches through a kubeconfig file.
type Cluster struct {
	Kubeconfig string
}

// config is an action configuration for namespace, with releases stored
// as Secrets (Helm's default driver).
func (c Cluster) config(namespace string) (*action.Configuration, error) {
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &c.Kubeconfig
	flags.Namespace = &namespace
	cfg := quiet()
	if err := cfg.Init(flags, namespace, "secret"); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Install runs `helm install RELEASE CHART --namespace namespace
// --create-namespace` with vals, not waiting for readiness (the simulated
// nodes run no DaemonSet pods).
func (c Cluster) Install(ch *chart.Chart, releaseName, namespace string, vals map[string]any) (*release.Release, error) {
	cfg, err := c.config(namespace)
	if err != nil {
		return nil, err
	}
	inst := action.NewInstall(cfg)
	inst.ReleaseName = releaseName
	inst.Namespace = namespace
	inst.CreateNamespace = true
	inst.WaitStrategy = kube.HookOnlyStrategy
	rel, err := inst.Run(ch, vals)
	if err != nil {
		return nil, err
	}
	return v1(rel)
}

// Uninstall runs `helm uninstall RELEASE --namespace namespace`.
func (c Cluster) Uninstall(releaseName, namespace string) error {
	cfg, err := c.config(namespace)
	if err != nil {
		return err
	}
	un := action.NewUninstall(cfg)
	un.WaitStrategy = kube.HookOnlyStrategy
	_, err = un.Run(releaseName)
	return err
}

// Releases lists every release of namespace, whatever its status (`helm
// list --all`).
func (c Cluster) Releases(namespace string) ([]*release.Release, error) {
	cfg, err := c.config(namespace)
	if err != nil {
		return nil, err
	}
	l := action.NewList(cfg)
	l.All = true
	l.SetStateMask()
	rels, err := l.Run()
	if err != nil {
		return nil, err
	}
	var out []*release.Release
	for _, r := range rels {
		v, err := v1(r)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func v1(rel any) (*release.Release, error) {
	switch r := rel.(type) {
	case *release.Release:
		return r, nil
	case release.Release:
		return &r, nil
	}
	return nil, fmt.Errorf("helm returned a release of type %T", rel)
}
