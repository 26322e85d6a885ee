package validate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/tcpxogen/tcpxogen/internal/evidence"
	"github.com/tcpxogen/tcpxogen/validators/performance/report"
)

// errMutableTags refuses evidence about a run that ran an image by a
// mutable tag: the bundle could not say what ran.
var errMutableTags = errors.New("no evidence signed")

// benchmarkPods lists the TrainJob's pods (launcher and workers; JobSet
// labels each with the TrainJob's name) and adds the last all-Running worker
// snapshot, in case the workers are gone by now.
func benchmarkPods(ctx context.Context, kube kubernetes.Interface, ns, trainJob string, running []corev1.Pod) ([]corev1.Pod, error) {
	sel := labels.Set{jobsetv1alpha2.JobSetNameKey: trainJob}.String()
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, readError("the pods of TrainJob "+ns+"/"+trainJob, podsResource, "list", err)
	}
	return append(list.Items, running...), nil
}

// ranImages are the images pods' containers ran, as their statuses report
// them, deduplicated and sorted; pod names, nodes and UIDs are dropped.
func ranImages(pods []corev1.Pod) []evidence.RanImage {
	seen := map[evidence.RanImage]bool{}
	var out []evidence.RanImage
	add := func(init bool, statuses []corev1.ContainerStatus) {
		for _, c := range statuses {
			r := evidence.RanImage{Container: c.Name, Init: init, Image: c.Image, ImageID: c.ImageID}
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	for _, p := range pods {
		add(true, p.Status.InitContainerStatuses)
		add(false, p.Status.ContainerStatuses)
	}
	slices.SortFunc(out, func(a, b evidence.RanImage) int {
		return cmp.Or(cmp.Compare(a.Container, b.Container), cmp.Compare(a.Image, b.Image), cmp.Compare(a.ImageID, b.ImageID))
	})
	return out
}

// runtimeDigest is the DeployedRuntimeDigest of the runtime the run compared
// and derived the benchmark from: the sha256 of the canonical JSON of its
// spec (evidence.CanonicalJSON).
func runtimeDigest(rt *trainer.ClusterTrainingRuntime) (string, error) {
	if rt == nil {
		return "", errors.New("no deployed runtime to digest")
	}
	return evidence.Digest(rt.Spec)
}

// sign makes the outcome's evidence bundle over its report, chart and log:
// report.Evidence's predicate plus what only a live run knows. A run that
// ran an image by a mutable tag gets none (errMutableTags) unless allowed.
func (o *outcome) sign(key *evidence.PrivateKey, rc report.Context, deployed *trainer.ClusterTrainingRuntime, pods []corev1.Pod, allowMutable bool) error {
	p := report.Evidence(o.Log, o.Verdict, rc)
	digest, err := runtimeDigest(deployed)
	if err != nil {
		return fmt.Errorf("signing the evidence: %w", err)
	}
	p.DeployedRuntimeDigest = digest
	p.Images = ranImages(pods)
	if len(p.Images) == 0 {
		return fmt.Errorf("%w: the benchmark's pods report no container statuses, so the evidence could not say which images ran", errMutableTags)
	}
	for _, r := range p.Images {
		if !r.HasDigest() {
			p.TagOnlyImages = append(p.TagOnlyImages, r)
		}
	}
	if len(p.TagOnlyImages) > 0 {
		if !allowMutable {
			var named []string
			for _, r := range p.TagOnlyImages {
				named = append(named, fmt.Sprintf("container %s ran %s (imageID %q)", r.Container, r.Image, r.ImageID))
			}
			return fmt.Errorf("%w: %s: a mutable tag, not a sha256 digest, so the evidence could not say what ran; pin the image as repo:tag@sha256:<digest> (--benchmark-image), or sign anyway with --allow-mutable-tags, which records the tag-only images", errMutableTags, strings.Join(named, "; "))
		}
		p.MutableTagsAllowed = true
	}
	files := []evidence.File{{Name: report.File, Data: o.ctrf}, {Name: report.ChartFile, Data: o.chart}, {Name: LogFile, Data: o.raw}}
	if o.bundle, err = evidence.Sign(key, files, p); err != nil {
		return fmt.Errorf("--sign-key: %w", err)
	}
	return nil
}
