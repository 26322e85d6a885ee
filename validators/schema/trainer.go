package schema

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/webhooks"
)

const (
	trainerModule = "github.com/kubeflow/trainer/v2"
	// trainerCRDDir is where the trainer module ships its CRDs, relative to the module root.
	trainerCRDDir = "manifests/base/crds"
	trainerGroup  = "trainer.kubeflow.org"

	trainJobWebhookUnchecked = "trainer TrainJob admission webhook: it validates a TrainJob against its referenced runtime through the trainer runtime framework; realization runs that check"
)

// NewTrainer returns a Validator for the Kubeflow Trainer CRDs of the trainer module linked into
// this binary (see TrainerCRDFiles).
func NewTrainer() (*Validator, error) {
	files, err := TrainerCRDFiles()
	if err != nil {
		return nil, err
	}
	return New(files...)
}

// TrainerCRDFiles returns the CRD manifests shipped inside the Kubeflow Trainer Go module, read
// from the Go module cache. The version is the one linked into this binary, which is go.mod's
// when built from this module: the CRDs then always match the webhook code and Go types the
// validator runs, with no copy in the repository to drift.
func TrainerCRDFiles() ([][]byte, error) {
	dir, err := trainerModuleDir()
	if err != nil {
		return nil, err
	}
	crdDir := filepath.Join(dir, filepath.FromSlash(trainerCRDDir))
	// Only the CRDs: the directory also holds a kustomization.yaml.
	paths, err := filepath.Glob(filepath.Join(crdDir, trainerGroup+"_*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("listing trainer CRDs: %w", err)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no %s_*.yaml CRDs in %s: the trainer module layout changed; update trainerCRDDir", trainerGroup, crdDir)
	}
	slices.Sort(paths)
	files := make([][]byte, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading trainer CRD: %w", err)
		}
		files = append(files, b)
	}
	return files, nil
}

// trainerModuleDir finds the trainer module's source tree. A binary knows from its build info
// which trainer it links, so the module cache path is computed from that rather than asked of
// `go list -m`, which answers for whatever module the working directory is in and fails outside
// one. Test binaries carry no dependency build info; they run inside the module, where
// `go list -m` gives go.mod's version, the same one.
func trainerModuleDir() (string, error) {
	mod, err := linkedModule(trainerModule)
	if err != nil {
		return goListModuleDir(trainerModule)
	}
	return cachedModuleDir(mod)
}

// cachedModuleDir returns where the go command keeps mod's source.
func cachedModuleDir(mod *debug.Module) (string, error) {
	if mod.Replace != nil {
		mod = mod.Replace
		if mod.Version == "" {
			// A directory replacement: the source is right there.
			return mod.Path, nil
		}
	}
	cache, err := goModCache()
	if err != nil {
		return "", err
	}
	escaped, err := escapeModulePath(mod.Path)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, filepath.FromSlash(escaped)+"@"+mod.Version)
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("%s@%s is not in the Go module cache (%w); run `go mod download %s` in the tcpxogen module", mod.Path, mod.Version, err, mod.Path)
	}
	return dir, nil
}

func linkedModule(path string) (*debug.Module, error) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil, errors.New("binary has no build info")
	}
	for _, m := range info.Deps {
		if m.Path == path {
			return m, nil
		}
	}
	return nil, fmt.Errorf("%s is not linked into this binary", path)
}

func goModCache() (string, error) {
	if dir := os.Getenv("GOMODCACHE"); dir != "" {
		return dir, nil
	}
	out, err := runGo("env", "GOMODCACHE")
	if err != nil {
		return "", err
	}
	if out == "" {
		return "", errors.New("`go env GOMODCACHE` is empty; set GOMODCACHE or GOPATH")
	}
	return out, nil
}

// goListModuleDir is the fallback when build info is missing: the module as the module in the
// working directory requires it.
func goListModuleDir(path string) (string, error) {
	out, err := runGo("list", "-m", "-f", "{{.Dir}}", path)
	if err != nil {
		return "", fmt.Errorf("locating %s (run from inside the tcpxogen module): %w", path, err)
	}
	if out == "" {
		return "", fmt.Errorf("%s is not downloaded; run `go mod download %s` in the tcpxogen module", path, path)
	}
	return out, nil
}

func runGo(args ...string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the trainer CRDs are read from the Go module cache, which needs the go command: %w; install Go or pass the CRDs to schema.New", err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(goBin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// escapeModulePath applies the module cache's case encoding (golang.org/x/mod/module.EscapePath):
// each upper-case letter becomes '!' and its lower-case form.
func escapeModulePath(path string) (string, error) {
	var b strings.Builder
	for _, r := range path {
		switch {
		case r == '!' || r > 0x7f:
			return "", fmt.Errorf("module path %q has a character the module cache cannot encode", path)
		case 'A' <= r && r <= 'Z':
			b.WriteByte('!')
			b.WriteRune(r + ('a' - 'A'))
		default:
			b.WriteRune(r)
		}
	}
	return b.String(), nil
}

// admissionCheck runs one validating webhook's create check on an unstructured object.
type admissionCheck func(ctx context.Context, u map[string]any) (admission.Warnings, error)

// admissionChecks are the trainer webhooks that can run without a cluster. They apply to these
// kinds whichever constructor loaded the CRDs, since they are what the linked trainer enforces.
var admissionChecks = map[k8sschema.GroupVersionKind]admissionCheck{
	trainer.GroupVersion.WithKind(trainer.ClusterTrainingRuntimeKind): typedCheck((&webhooks.ClusterTrainingRuntimeValidator{}).ValidateCreate),
	trainer.GroupVersion.WithKind(trainer.TrainingRuntimeKind):        typedCheck((&webhooks.TrainingRuntimeValidator{}).ValidateCreate),
}

func typedCheck[T any, PT interface {
	*T
	runtime.Object
}](validate func(context.Context, PT) (admission.Warnings, error)) admissionCheck {
	return func(ctx context.Context, u map[string]any) (admission.Warnings, error) {
		obj := PT(new(T))
		if err := toTyped(u, obj); err != nil {
			return nil, fmt.Errorf("the object does not decode as the trainer Go type the webhook and controller read: %w", err)
		}
		return validate(ctx, obj)
	}
}

// runAdmission runs the registered webhook for gvk, if any, and turns its warnings and errors
// into findings. Warnings count: a runtime shipped with a deprecation warning is not clean.
func runAdmission(gvk k8sschema.GroupVersionKind, u map[string]any) []Finding {
	check, ok := admissionChecks[gvk]
	if !ok {
		return nil
	}
	// The webhooks log through the context's logger; a discard logger keeps controller-runtime
	// from complaining that no logger was ever set.
	ctx := ctrl.LoggerInto(context.Background(), logr.Discard())
	warnings, err := check(ctx, u)
	var findings []Finding
	for _, w := range warnings {
		findings = append(findings, Finding{Kind: FindingWebhook, Detail: "warning: " + w})
	}
	return append(findings, webhookErrorFindings(err)...)
}

func webhookErrorFindings(err error) []Finding {
	if err == nil {
		return nil
	}
	var errs []error
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		errs = agg.Errors()
	} else {
		errs = []error{err}
	}
	findings := make([]Finding, 0, len(errs))
	for _, e := range errs {
		var fe *field.Error
		if errors.As(e, &fe) {
			findings = append(findings, fieldErrorFinding(FindingWebhook, fe))
			continue
		}
		findings = append(findings, Finding{Kind: FindingWebhook, Detail: e.Error()})
	}
	return findings
}
