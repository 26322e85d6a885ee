package harness

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
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
	c := cp.Config
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{
		Server:                   c.Host,
		CertificateAuthority:     c.TLSClientConfig.CAFile,
		CertificateAuthorityData: c.TLSClientConfig.CAData,
		InsecureSkipTLSVerify:    c.TLSClientConfig.Insecure,
		TLSServerName:            c.TLSClientConfig.ServerName,
	}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: name}
	cfg.CurrentContext = "e2e"
	return clientcmd.WriteToFile(*cfg, path)
}
