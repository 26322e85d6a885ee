package harness

import (
	"context"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/restmapper"
	"k8s.io/controller-manager/pkg/informerfactory"
	"k8s.io/kubernetes/pkg/controller/garbagecollector"
)

// startGarbageCollector runs kube-controller-manager's garbage collector,
// set up as its core.go does. Without it nothing owned is ever deleted: a
// TrainJob's JobSet, Jobs and pods outlive it, and a foreground deletion
// (what validate's teardown asks for) never completes. It must start after
// the CRDs are installed: it learns the resources from discovery and
// resyncs only every 30 s.
func (cp *ControlPlane) startGarbageCollector(ctx context.Context) error {
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
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	typed := informers.NewSharedInformerFactory(cp.Kube, 0)
	meta := metadatainformer.NewSharedInformerFactory(md, 0)
	started := make(chan struct{})
	gc, err := garbagecollector.NewGarbageCollector(ctx, cp.Kube, md, mapper, garbagecollector.DefaultIgnoredResources(), informerfactory.NewInformerFactory(typed, meta), started)
	if err != nil {
		cancel()
		return err
	}
	typed.Start(ctx.Done())
	meta.Start(ctx.Done())
	close(started)
	done := make(chan struct{}, 2)
	go func() { gc.Run(ctx, 5, 30*time.Second); done <- struct{}{} }()
	go func() { gc.Sync(ctx, dc, 30*time.Second); done <- struct{}{} }()
	cp.stops = append(cp.stops, func() {
		cancel()
		<-done
		<-done
		typed.Shutdown()
		meta.Shutdown()
	})
	return nil
}
