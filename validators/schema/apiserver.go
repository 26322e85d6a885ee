//go:build apiserver

package schema

import (
	"context"
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apiextensions-apiserver/test/integration/fixtures"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// StartAPIServer starts a real apiextensions-apiserver in-process, backed by an embedded etcd,
// and stops both when the test ends. It serves CRDs and custom resources only: no built-in
// kinds, no admission webhooks. It sets KUBE_INTEGRATION_ETCD_URL with tb.Setenv, so it cannot
// be called from a parallel test.
//
// It is compiled only with the apiserver build tag: it links an etcd server and a whole API
// server. Test binaries using it must not be built with -trimpath, because the server fixtures
// find their serving certificates through runtime.Caller.
func StartAPIServer(tb testing.TB) (dynamic.Interface, *rest.Config) {
	tb.Helper()
	etcdConfig := testserver.NewTestConfig(tb)
	testserver.RunEtcd(tb, etcdConfig)
	// The fixtures read the etcd address from the environment only; passing --etcd-servers
	// again would append to their default instead of replacing it.
	tb.Setenv("KUBE_INTEGRATION_ETCD_URL", etcdConfig.ListenClientUrls[0].String())

	tearDown, config, _, err := fixtures.StartDefaultServer(tb)
	if err != nil {
		tb.Fatalf("starting apiextensions-apiserver: %v", err)
	}
	// Registered after etcd's cleanup, so it runs first: the server stops before its storage.
	tb.Cleanup(tearDown)

	dyn, err := dynamic.NewForConfig(config)
	if err != nil {
		tb.Fatalf("dynamic client: %v", err)
	}
	return dyn, config
}

// InstallCRDs creates the CRDs in crdFiles (multi-document YAML) on the server behind cfg and
// waits until each is Established and discoverable, so custom resources can be created right
// away. It returns the CRDs as the server stored them.
func InstallCRDs(tb testing.TB, cfg *rest.Config, crdFiles ...[]byte) []*apiextensionsv1.CustomResourceDefinition {
	tb.Helper()
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		tb.Fatalf("apiextensions client: %v", err)
	}
	var created []*apiextensionsv1.CustomResourceDefinition
	for i, file := range crdFiles {
		docs, err := splitYAML(file)
		if err != nil {
			tb.Fatalf("CRD file %d: %v", i+1, err)
		}
		for _, d := range docs {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(d.json, crd); err != nil {
				tb.Fatalf("CRD file %d, document %d: %v", i+1, d.number, err)
			}
			// Waits until every served version shows up in discovery.
			crd, err = fixtures.CreateNewV1CustomResourceDefinitionWatchUnsafe(crd, client)
			if err != nil {
				tb.Fatalf("creating CRD from file %d, document %d: %v", i+1, d.number, err)
			}
			created = append(created, crd)
		}
	}
	for i, crd := range created {
		established, err := waitEstablished(client, crd.Name)
		if err != nil {
			tb.Fatal(err)
		}
		created[i] = established
	}
	return created
}

func waitEstablished(client clientset.Interface, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	var crd *apiextensionsv1.CustomResourceDefinition
	var lastErr error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		crd, lastErr = client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if lastErr != nil {
			return false, nil
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse {
				return false, fmt.Errorf("CRD %s names not accepted: %s", name, c.Message)
			}
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for CRD %s to be Established (last error: %v): %w", name, lastErr, err)
	}
	return crd, nil
}
