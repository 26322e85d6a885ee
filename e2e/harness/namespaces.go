package harness

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	"k8s.io/kubernetes/pkg/controller/namespace"
)

// startNamespaceController runs kube-controller-manager's namespace
// controller, set up as its core.go does: a deleted namespace's content is
// removed and the namespace goes, instead of staying Terminating forever.
// Without it a scenario that installs the trainer and tears it down leaves
// its namespace Terminating, and the next install into it is refused by the
// namespace lifecycle admission plugin.
func (cp *ControlPlane) startNamespaceController(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	md, err := metadata.NewForConfig(cp.Config)
	if err != nil {
		cancel()
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		cancel()
		return err
	}
	typed := informers.NewSharedInformerFactory(cp.Kube, 0)
	nc := namespace.NewNamespaceController(ctx, cp.Kube, md, dc.ServerPreferredNamespacedResources, typed.Core().V1().Namespaces(), 5*time.Minute, corev1.FinalizerKubernetes)
	typed.Start(ctx.Done())
	done := make(chan struct{})
	go func() { nc.Run(ctx, 5); close(done) }()
	cp.stops = append(cp.stops, func() {
		cancel()
		<-done
		typed.Shutdown()
	})
	return nil
}
