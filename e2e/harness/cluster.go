package harness

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WriteKubeconfig writes the control plane's admin credentials as a
// kubeconfig at path, for tools driven through their CLI.
func (cp *ControlPlane) WriteKubeconfig(path string) error {
	c := cp.Config
	return cp.writeKubeconfig(path, "admin", &clientcmdapi.AuthInfo{
		Token:                 c.BearerToken,
		ClientCertificate:     c.TLSClientConfig.CertFile,
		ClientCertificateData: c.TLSClientConfig.CertData,
		ClientKey:             c.TLSClientConfig.KeyFile,
		ClientKeyData:         c.TLSClientConfig.KeyData,
	})
}

// writeKubeconfig writes a kubeconfig reaching the API server as user.
func (cp *ControlPlane) writeKubeconfig(path, user string, auth *clientcmdapi.AuthInfo) error {
	c := cp.Config
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{
		Server:                   c.Host,
		CertificateAuthority:     c.TLSClientConfig.CAFile,
		CertificateAuthorityData: c.TLSClientConfig.CAData,
		InsecureSkipTLSVerify:    c.TLSClientConfig.Insecure,
		TLSServerName:            c.TLSClientConfig.ServerName,
	}
	cfg.AuthInfos[user] = auth
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: user}
	cfg.CurrentContext = "e2e"
	return clientcmd.WriteToFile(*cfg, path)
}

// BuildCLI builds the shipped tcpxogen CLI from the parent module at
// repoRoot into dir, as a user gets it.
func BuildCLI(repoRoot, dir string) (string, error) {
	bin := filepath.Join(dir, "tcpxogen")
	cmd := exec.Command("go", "build", "-o", bin, "./tools/tcpxogen")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./tools/tcpxogen: %v\n%s", err, out)
	}
	return bin, nil
}

// AttachNetworks creates each network as a GKE Device network with its
// GKENetworkParamSet, as a user provisioning the GPU NICs does. Idempotent.
// The nodes' side is SetNodeNICs (ProvisionPool does both).
func (cp *ControlPlane) AttachNetworks(ctx context.Context, networks []string) error {
	return cp.AttachNetworksOf(ctx, networkv1.NetDevice, networks)
}

// AttachNetworksOf is AttachNetworks with GKENetworkParamSets of deviceMode
// mode (RDMA for the RDMA networks of A3 Ultra and A4, Google's setup). An
// existing GKENetworkParamSet is updated to mode.
func (cp *ControlPlane) AttachNetworksOf(ctx context.Context, mode networkv1.DeviceModeType, networks []string) error {
	strict := client.FieldValidation(metav1.FieldValidationStrict)
	for _, n := range networks {
		params := &networkv1.GKENetworkParamSet{
			ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec:       networkv1.GKENetworkParamSetSpec{VPC: "vpc-" + n, VPCSubnet: "subnet-" + n, DeviceMode: mode},
		}
		err := cp.Client.Create(ctx, params, strict)
		if apierrors.IsAlreadyExists(err) {
			cur := &networkv1.GKENetworkParamSet{}
			if err = cp.Client.Get(ctx, client.ObjectKey{Name: n}, cur); err == nil && cur.Spec.DeviceMode != mode {
				cur.Spec.DeviceMode = mode
				err = cp.Client.Update(ctx, cur, strict)
			}
		}
		if err != nil {
			return fmt.Errorf("GKENetworkParamSet %s: %w", n, err)
		}
		net := &networkv1.Network{
			ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec: networkv1.NetworkSpec{
				Type:          networkv1.DeviceNetworkType,
				ParametersRef: &networkv1.NetworkParametersReference{Group: "networking.gke.io", Kind: "GKENetworkParamSet", Name: n},
			},
		}
		if err := cp.Client.Create(ctx, net, strict); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("Network %s: %w", n, err)
		}
	}
	return nil
}
