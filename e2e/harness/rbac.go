package harness

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// The API server runs the RBAC authorizer (startAPIServer), so a tool run
// as a ServiceAccount gets exactly what its roles grant. The harness's own
// clients, the controllers and the node simulator use the loopback
// credentials, in system:masters, which RBAC always allows.

// ServiceAccountKubeconfig writes a kubeconfig at path that authenticates as
// the ServiceAccount namespace/name (which must exist) with a token from the
// TokenRequest API, valid for an hour.
func (cp *ControlPlane) ServiceAccountKubeconfig(ctx context.Context, namespace, name, path string) error {
	tr, err := cp.Kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("a token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return cp.writeKubeconfig(path, name, &clientcmdapi.AuthInfo{Token: tr.Status.Token})
}
