// Package harness runs a real Kubernetes control plane inside one process:
// an embedded etcd, kube-apiserver from k8s.io/kubernetes, the Job
// controller and garbage collector, the JobSet controllers, the Kubeflow Trainer controllers and
// webhooks of the pinned versions, GKE's multi-network CRDs, and a node
// simulator standing in for kubelets. No binaries and no network: every
// piece is linked in, every manifest is read from the pinned Go modules.
//
// It is built for TestMain: Start once per test binary, isolate scenarios
// by namespace, Stop at the end.
package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	networkv1 "github.com/GoogleCloudPlatform/gke-networking-api/apis/network/v1"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/uuid"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainercontroller "github.com/kubeflow/trainer/v2/pkg/controller"
	runtimecore "github.com/kubeflow/trainer/v2/pkg/runtime/core"
	trainerwebhooks "github.com/kubeflow/trainer/v2/pkg/webhooks"
	"go.etcd.io/etcd/server/v3/embed"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	apiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	jobsetcontrollers "sigs.k8s.io/jobset/pkg/controllers"
	schedulerpluginsv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	"sigs.k8s.io/yaml"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// Module paths whose shipped manifests the harness installs. Their versions
// are this module's go.mod: the manifests always match the linked code.
const (
	TrainerModule = "github.com/kubeflow/trainer/v2"
	JobSetModule  = "sigs.k8s.io/jobset"
	NetworkModule = "github.com/GoogleCloudPlatform/gke-networking-api"
)

// JobSet's and the trainer's webhook configurations are both named
// mutating-/validating-webhook-configuration (kustomize prefixes them on a
// real install, e.g. jobset-mutating-webhook-configuration); the JobSet
// one is renamed here so both, and a dry run of the real install, fit.
const jobSetMutatingWebhookName = "e2e-jobset-defaulting"

// ControlPlane is a running control plane.
type ControlPlane struct {
	// Config reaches the API server as an administrator, speaking JSON.
	Config  *rest.Config
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	// Client is a controller-runtime client whose scheme knows the core,
	// trainer, JobSet and GKE network types.
	Client client.Client
	Scheme *apiruntime.Scheme
	// Nodes simulates the kubelets.
	Nodes *NodeSimulator
	// Modules maps module path to its source directory.
	Modules map[string]string

	stops []func()
}

// Options tunes Start.
type Options struct {
	// Log receives the components' logs; nil discards them (the API server
	// alone writes thousands of lines).
	Log io.Writer
	// Nodes is how many simulated GPU nodes to register (default 2).
	Nodes int
	// NoTrainer leaves Kubeflow Trainer and JobSet out: no CRDs, webhooks
	// or controllers, a cluster on which validate's policy installs the
	// trainer.
	NoTrainer bool
}

// NewScheme returns the scheme of the trainer controller manager (as in
// its cmd/trainer-controller-manager/main.go) plus GKE's network types.
func NewScheme() *apiruntime.Scheme {
	s := apiruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(trainer.AddToScheme(s))
	utilruntime.Must(jobsetv1alpha2.AddToScheme(s))
	utilruntime.Must(schedulerpluginsv1alpha1.AddToScheme(s))
	utilruntime.Must(volcanov1beta1.AddToScheme(s))
	utilruntime.Must(networkv1.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}

// Start brings the control plane up. On error everything started so far is
// stopped again.
func Start(ctx context.Context, opts Options) (cp *ControlPlane, err error) {
	if opts.Nodes == 0 {
		opts.Nodes = 2
	}
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	logger := funcr.New(func(prefix, args string) {
		fmt.Fprintln(logw, prefix, args)
	}, funcr.Options{Verbosity: 0})
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)

	cp = &ControlPlane{Scheme: NewScheme()}
	defer func() {
		if err != nil {
			cp.Stop()
			cp = nil
		}
	}()

	cp.Modules, err = moduleDirs(TrainerModule, JobSetModule, NetworkModule)
	if err != nil {
		return nil, err
	}
	if err := checkLinkedTrainer(cp.Modules[TrainerModule]); err != nil {
		return nil, err
	}

	etcdURL, err := cp.startEtcd()
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	if err := cp.startAPIServer(etcdURL, logw); err != nil {
		return nil, fmt.Errorf("kube-apiserver: %w", err)
	}
	if cp.Kube, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return nil, err
	}
	if cp.Dynamic, err = dynamic.NewForConfig(cp.Config); err != nil {
		return nil, err
	}
	if cp.Client, err = client.New(cp.Config, client.Options{Scheme: cp.Scheme}); err != nil {
		return nil, err
	}

	if err := cp.installCRDs(!opts.NoTrainer); err != nil {
		return nil, err
	}
	if err := cp.startGarbageCollector(ctx); err != nil {
		return nil, fmt.Errorf("garbage collector: %w", err)
	}
	if err := cp.startNamespaceController(ctx); err != nil {
		return nil, fmt.Errorf("namespace controller: %w", err)
	}
	if err := cp.startJobController(ctx); err != nil {
		return nil, fmt.Errorf("job controller: %w", err)
	}
	if !opts.NoTrainer {
		hooks, err := cp.webhookOptions()
		if err != nil {
			return nil, err
		}
		// Installs the configurations with a fresh CA, pointing them at
		// 127.0.0.1:port; the manager below serves that port with the same CA.
		if err := hooks.Install(cp.Config); err != nil {
			return nil, fmt.Errorf("installing webhook configurations: %w", err)
		}
		if err := cp.startManager(ctx, hooks, logger); err != nil {
			return nil, fmt.Errorf("trainer and jobset controllers: %w", err)
		}
	}
	cp.Nodes = newNodeSimulator(cp.Kube)
	stopLogs, err := cp.Nodes.serveLogs()
	if err != nil {
		return nil, fmt.Errorf("simulated kubelet log server: %w", err)
	}
	cp.stops = append(cp.stops, stopLogs)
	if err := cp.Nodes.registerNodes(ctx, opts.Nodes); err != nil {
		return nil, fmt.Errorf("registering simulated nodes: %w", err)
	}
	simCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); cp.Nodes.run(simCtx) }()
	cp.stops = append(cp.stops, func() { cancel(); <-done })
	return cp, nil
}

// Stop stops everything in reverse start order: controllers before the API
// server (else its shutdown waits ~60 s for their watches), the API server
// before etcd.
func (cp *ControlPlane) Stop() {
	for i := len(cp.stops) - 1; i >= 0; i-- {
		cp.stops[i]()
	}
	cp.stops = nil
}

func (cp *ControlPlane) startEtcd() (string, error) {
	dir, err := os.MkdirTemp("", "tcpxogen-e2e-etcd")
	if err != nil {
		return "", err
	}
	cp.stops = append(cp.stops, func() { os.RemoveAll(dir) })
	clientURL, err := freeLoopbackURL()
	if err != nil {
		return "", err
	}
	peerURL, err := freeLoopbackURL()
	if err != nil {
		return "", err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.ListenClientUrls = []url.URL{*clientURL}
	cfg.AdvertiseClientUrls = []url.URL{*clientURL}
	cfg.ListenPeerUrls = []url.URL{*peerURL}
	cfg.AdvertisePeerUrls = []url.URL{*peerURL}
	cfg.InitialCluster = cfg.Name + "=" + peerURL.String()
	// A test store: durability is worthless, fsync costs seconds.
	cfg.UnsafeNoFsync = true
	cfg.LogLevel = "error"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return "", err
	}
	cp.stops = append(cp.stops, e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		return "", errors.New("etcd not ready after 60 s")
	}
	return clientURL.String(), nil
}

func freeLoopbackURL() (*url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return nil, err
	}
	return &url.URL{Scheme: "http", Host: addr}, nil
}

func (cp *ControlPlane) startAPIServer(etcdURL string, logw io.Writer) error {
	storage := storagebackend.NewDefaultConfig(path.Join("/", uuid.NewString(), "registry"), nil)
	storage.Transport.ServerList = []string{etcdURL}
	tb := newProcessTB(logw)
	srv, err := apiservertesting.StartTestServer(tb, apiservertesting.NewDefaultTestServerOptions(), []string{
		// No service account controller runs to create the tokens
		// this plugin insists on.
		"--disable-admission-plugins=ServiceAccount",
		// RBAC, so tools run as a ServiceAccount get only what their
		// roles grant (harness/rbac.go); the harness's loopback
		// credentials are system:masters, allowed everything.
		"--authorization-mode=RBAC",
		// Privileged containers, as on GKE: the node components (the
		// installer DaemonSet, the NRI injector) are privileged, and the
		// test server refuses them by default.
		"--allow-privileged=true",
	}, storage)
	if err != nil {
		tb.cleanup()
		return err
	}
	cp.stops = append(cp.stops, func() { srv.TearDownFn(); tb.cleanup() })
	cfg := rest.CopyConfig(srv.ClientConfig)
	// The test server's config asks for protobuf, which custom resources
	// cannot be encoded in.
	cfg.ContentType = "application/json"
	cfg.AcceptContentTypes = "application/json"
	cfg.QPS, cfg.Burst = 500, 1000
	cp.Config = cfg
	return nil
}

// installCRDs installs the trainer's and JobSet's CRDs and GKE's Network
// and GKENetworkParamSet, all from the pinned modules.
func (cp *ControlPlane) installCRDs(trainerToo bool) error {
	paths := []string{
		filepath.Join(cp.Modules[NetworkModule], "config", "crds", "networking.gke.io_networks.yaml"),
		filepath.Join(cp.Modules[NetworkModule], "config", "crds", "networking.gke.io_gkenetworkparamsets.yaml"),
	}
	if trainerToo {
		paths = append(paths,
			filepath.Join(cp.Modules[TrainerModule], "manifests", "base", "crds"),
			filepath.Join(cp.Modules[JobSetModule], "config", "components", "crd", "bases"))
	}
	_, err := envtest.InstallCRDs(cp.Config, envtest.CRDInstallOptions{
		Paths:              paths,
		ErrorIfPathMissing: true,
		MaxTime:            60 * time.Second,
	})
	if err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	return nil
}

// webhookOptions reads the trainer's webhook configurations as shipped and
// JobSet's JobSet-defaulting webhook. JobSet's validating webhooks and its
// pod webhooks exist for exclusive placement, which no scenario uses, and
// its webhooks package does not compile against the trainer's
// controller-runtime; its defaulting is re-registered below (jobSetDefaulter).
func (cp *ControlPlane) webhookOptions() (*envtest.WebhookInstallOptions, error) {
	opts := &envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	trainerMut, trainerVal, err := readWebhooks(filepath.Join(cp.Modules[TrainerModule], "manifests", "base", "webhook", "manifests.yaml"))
	if err != nil {
		return nil, err
	}
	jsMut, _, err := readWebhooks(filepath.Join(cp.Modules[JobSetModule], "config", "components", "webhook", "manifests.yaml"))
	if err != nil {
		return nil, err
	}
	if len(jsMut) != 1 {
		return nil, fmt.Errorf("JobSet ships %d mutating webhook configurations, want 1", len(jsMut))
	}
	js := jsMut[0]
	js.Name = jobSetMutatingWebhookName
	var keep []admissionv1.MutatingWebhook
	for _, w := range js.Webhooks {
		if w.ClientConfig.Service != nil && w.ClientConfig.Service.Path != nil && *w.ClientConfig.Service.Path == jobSetDefaultingPath {
			keep = append(keep, w)
		}
	}
	if len(keep) != 1 {
		return nil, fmt.Errorf("JobSet's webhook configuration has no %s webhook: its layout changed", jobSetDefaultingPath)
	}
	js.Webhooks = keep
	opts.MutatingWebhooks = append(trainerMut, js)
	opts.ValidatingWebhooks = trainerVal
	return opts, nil
}

func readWebhooks(file string) ([]*admissionv1.MutatingWebhookConfiguration, []*admissionv1.ValidatingWebhookConfiguration, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	var mut []*admissionv1.MutatingWebhookConfiguration
	var val []*admissionv1.ValidatingWebhookConfiguration
	for _, doc := range strings.Split(string(data), "\n---") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", file, err)
		}
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			m := &admissionv1.MutatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict([]byte(doc), m); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", file, err)
			}
			mut = append(mut, m)
		case "ValidatingWebhookConfiguration":
			v := &admissionv1.ValidatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict([]byte(doc), v); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", file, err)
			}
			val = append(val, v)
		case "":
		default:
			return nil, nil, fmt.Errorf("%s: unexpected kind %s", file, meta.Kind)
		}
	}
	return mut, val, nil
}

func (cp *ControlPlane) startJobController(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(cp.Kube, 0)
	jc, err := newJobController(ctx, factory, cp.Kube)
	if err != nil {
		cancel()
		return err
	}
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() { defer close(done); jc.Run(ctx, 2) }()
	cp.stops = append(cp.stops, func() { cancel(); <-done; factory.Shutdown() })
	return nil
}

// startManager runs one controller-runtime manager with the JobSet
// controllers (as JobSet's main.go sets them up) and the trainer's
// controllers and webhooks (as its cmd/trainer-controller-manager does,
// without the cert-controller: envtest made the serving certificate).
func (cp *ControlPlane) startManager(ctx context.Context, hooks *envtest.WebhookInstallOptions, logger logr.Logger) error {
	trainerCfg, err := loadTrainerConfig(cp.Scheme)
	if err != nil {
		return fmt.Errorf("trainer default configuration: %w", err)
	}
	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{
		Scheme:                 cp.Scheme,
		Logger:                 logger,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:    hooks.LocalServingHost,
			Port:    hooks.LocalServingPort,
			CertDir: hooks.LocalServingCertDir,
		}),
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	fail := func(err error) error { cancel(); return err }

	if err := jobsetcontrollers.SetupJobSetIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return fail(fmt.Errorf("jobset indexes: %w", err))
	}
	if err := jobsetcontrollers.SetupPodIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return fail(fmt.Errorf("jobset pod indexes: %w", err))
	}
	if err := jobsetcontrollers.NewJobSetReconciler(mgr.GetClient(), mgr.GetScheme(), jobSetRecorder(mgr, "jobset")).SetupWithManager(mgr); err != nil {
		return fail(fmt.Errorf("jobset controller: %w", err))
	}
	if err := jobsetcontrollers.NewPodReconciler(mgr.GetClient(), mgr.GetScheme(), jobSetRecorder(mgr, "pod")).SetupWithManager(mgr); err != nil {
		return fail(fmt.Errorf("jobset pod controller: %w", err))
	}
	mgr.GetWebhookServer().Register(jobSetDefaultingPath, admission.WithCustomDefaulter(cp.Scheme, &jobsetv1alpha2.JobSet{}, jobSetDefaulter{}))

	runtimes, err := runtimecore.New(ctx, mgr.GetClient(), mgr.GetFieldIndexer(), &trainerCfg)
	if err != nil {
		return fail(fmt.Errorf("trainer runtimes: %w", err))
	}
	if name, err := trainercontroller.SetupControllers(mgr, runtimes, ctrlcontroller.Options{}); err != nil {
		return fail(fmt.Errorf("trainer controller %s: %w", name, err))
	}
	if name, err := trainerwebhooks.Setup(mgr, runtimes); err != nil {
		return fail(fmt.Errorf("trainer webhook %s: %w", name, err))
	}

	errc := make(chan error, 1)
	go func() { errc <- mgr.Start(ctx) }()
	cp.stops = append(cp.stops, func() { cancel(); <-errc })

	// Ready when the caches synced and the webhook server answers TLS on
	// its port: before that the API server fails every TrainJob admission.
	syncCtx, syncCancel := context.WithTimeout(ctx, 60*time.Second)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		return errors.New("manager caches did not sync in 60 s")
	}
	checker := mgr.GetWebhookServer().StartedChecker()
	for {
		if err := checker(nil); err == nil {
			return nil
		}
		select {
		case err := <-errc:
			return fmt.Errorf("manager stopped: %w", err)
		case <-syncCtx.Done():
			return errors.New("webhook server not serving after 60 s")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// moduleDirs asks the go command where this module's dependencies are: the
// harness installs the manifests shipped inside them, at the versions
// linked into the test binary.
func moduleDirs(mods ...string) (map[string]string, error) {
	modfile, err := modfileFlags()
	if err != nil {
		return nil, err
	}
	args := append(append([]string{"list", "-m"}, modfile...), "-f", "{{.Path}} {{.Dir}}")
	out, err := exec.Command("go", append(args, mods...)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("go list -m: %v: %s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("go list -m: %w", err)
	}
	dirs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		p, d, ok := strings.Cut(line, " ")
		if !ok || d == "" {
			return nil, fmt.Errorf("go list -m: module %q has no directory (not downloaded? run go mod download)", p)
		}
		dirs[p] = d
	}
	for _, m := range mods {
		if dirs[m] == "" {
			return nil, fmt.Errorf("go list -m: no directory for %s", m)
		}
	}
	return dirs, nil
}

// Controller Deployments as the trainer v2.2.0 kustomize manifests name and
// label them (manifests/base/manager and JobSet's config/default).
const ControllerNamespace = "kubeflow-system"

// RegisterControllerDeployments creates the trainer's and JobSet's
// controller Deployments, available, in ControllerNamespace. They stand
// for the controllers this process runs: no Deployment controller or
// kubelet runs their pods, but a tool that finds a trainer by its
// Deployments (validate's lifecycle policy) must see it as installed.
// Idempotent.
func (cp *ControlPlane) RegisterControllerDeployments(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ControllerNamespace}}
	if _, err := cp.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for name, labels := range map[string]map[string]string{
		"kubeflow-trainer-controller-manager": {"app.kubernetes.io/name": "trainer", "app.kubernetes.io/component": "manager", "app.kubernetes.io/part-of": "kubeflow"},
		"jobset-controller-manager":           {"control-plane": "controller-manager", "app.kubernetes.io/name": "jobset", "app.kubernetes.io/component": "manager", "app.kubernetes.io/part-of": "jobset"},
	} {
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ControllerNamespace, Name: name, Labels: labels},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "in-process"}}},
				},
			},
		}
		created, err := cp.Kube.AppsV1().Deployments(ControllerNamespace).Create(ctx, dep, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return err
		}
		created.Status = appsv1.DeploymentStatus{ObservedGeneration: created.Generation, Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, UpdatedReplicas: 1}
		if _, err := cp.Kube.AppsV1().Deployments(ControllerNamespace).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return nil
}
