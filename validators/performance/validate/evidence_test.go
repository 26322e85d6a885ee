package validate

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/tcpxogen/tcpxogen/internal/evidence"
	"github.com/tcpxogen/tcpxogen/validators/performance/busbw"
	"github.com/tcpxogen/tcpxogen/validators/performance/report"
)

var keysTestdata = filepath.Join("..", "..", "..", "internal", "evidence", "testdata")

const (
	daemonImageID = "us-docker.pkg.dev/example/tcpxo-daemon@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	benchImageID  = "docker-pullable://us-docker.pkg.dev/example/nccl-tests/nccl-tests@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	secretNode    = "gke-secret-node-a3mega-7"
	secretPodUID  = "0b7e2c1e-5c3a-4bfa-9d0e-secretuid"
)

// benchPod is a finished benchmark pod as the kubelet reports it.
func benchPod(name, job, benchID string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: secretPodUID,
			Labels: map[string]string{jobsetv1alpha2.JobSetNameKey: "job", jobsetv1alpha2.ReplicatedJobNameKey: job}},
		Spec: corev1.PodSpec{NodeName: secretNode, Hostname: name},
		Status: corev1.PodStatus{
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "tcpxo-daemon", Image: "us-docker.pkg.dev/example/tcpxo-daemon:v1@sha256:1111111111111111111111111111111111111111111111111111111111111111", ImageID: daemonImageID}},
			ContainerStatuses:     []corev1.ContainerStatus{{Name: "node", Image: pinnedImage, ImageID: benchID}},
		},
	}
}

func loadKeys(t *testing.T) (*evidence.PrivateKey, *evidence.PublicKey) {
	t.Helper()
	key, err := evidence.LoadPrivateKey("--sign-key", filepath.Join(keysTestdata, "ed25519.pem"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(keysTestdata, "ed25519.pub.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := evidence.ParsePublicKey(data)
	if err != nil {
		t.Fatal(err)
	}
	return key, pub
}

func judgedHealthy(t *testing.T) *outcome {
	t.Helper()
	floor, _ := busbw.ParseFloor(">= 300")
	o, err := judge(ncclLog(t, "healthy.log"), tcpxoJudging(t, floor), liveContext)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// A signed run's bundle verifies with the public key (sigstore-go's
// verifier), signs the report, chart and log, and its predicate carries the
// images from the pods' statuses and the deployed runtime's digest, but no
// pod name, node or UID.
func TestSignedResultsVerify(t *testing.T) {
	key, pub := loadKeys(t)
	deployed := shippedFor(t, declared)
	// Listed as the run lists them: launcher and workers by the JobSet
	// label, and a worker snapshot that repeats one of them.
	kube := fake.NewClientset(
		ptrTo(benchPod("job-launcher-0-0-abcde", constants.Launcher, benchImageID)),
		ptrTo(benchPod("job-node-0-0-fghij", constants.Node, benchImageID)),
		ptrTo(benchPod("job-node-0-1-klmno", constants.Node, benchImageID)))
	pods, err := benchmarkPods(context.Background(), kube, "default", "job", []corev1.Pod{benchPod("job-node-0-1-klmno", constants.Node, benchImageID)})
	if err != nil {
		t.Fatal(err)
	}
	o := judgedHealthy(t)
	if err := o.sign(key, liveContext, deployed, pods, false); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	paths, err := o.write(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 4 || paths[3] != filepath.Join(dir, evidence.BundleFile) {
		t.Fatalf("wrote %v, want the report, chart, log and bundle", paths)
	}
	files := []evidence.File{}
	for _, name := range []string{report.File, report.ChartFile, LogFile} {
		files = append(files, evidence.File{Name: name, Data: []byte(readFile(t, filepath.Join(dir, name)))})
	}
	res, err := evidence.Verify(pub, []byte(readFile(t, paths[3])), files)
	if err != nil {
		t.Fatalf("the bundle does not verify: %v", err)
	}
	p := res.Predicate
	want := []evidence.RanImage{
		{Container: "node", Image: pinnedImage, ImageID: benchImageID},
		{Container: "tcpxo-daemon", Init: true, Image: "us-docker.pkg.dev/example/tcpxo-daemon:v1@sha256:1111111111111111111111111111111111111111111111111111111111111111", ImageID: daemonImageID},
	}
	if got, _ := json.Marshal(p.Images); string(got) != string(mustJSON(t, want)) {
		t.Errorf("images %s, want %s", got, mustJSON(t, want))
	}
	digest, err := evidence.Digest(deployed.Spec)
	if err != nil || p.DeployedRuntimeDigest != digest || !strings.HasPrefix(digest, "sha256:") {
		t.Errorf("deployedRuntimeDigest %q, want %q (%v)", p.DeployedRuntimeDigest, digest, err)
	}
	if p.RuntimeSource != "shipped" || p.Nodes == 0 || p.Ranks == 0 || p.MutableTagsAllowed || len(p.TagOnlyImages) > 0 {
		t.Errorf("predicate %+v", p)
	}
	raw := string(mustJSON(t, p))
	for _, secret := range []string{"job-launcher", "job-node", secretNode, secretPodUID} {
		if strings.Contains(raw, secret) {
			t.Errorf("the predicate holds %q: %s", secret, raw)
		}
	}
}

// A container that ran an image by a mutable tag gets no evidence, naming
// the container and image, unless --allow-mutable-tags, which records it.
func TestMutableTagRefusedUnlessAllowed(t *testing.T) {
	key, pub := loadKeys(t)
	deployed := shippedFor(t, declared)
	pods := []corev1.Pod{benchPod("job-node-0-0", constants.Node, "us-docker.pkg.dev/example/nccl-tests:latest")}

	o := judgedHealthy(t)
	err := o.sign(key, liveContext, deployed, pods, false)
	if !errors.Is(err, errMutableTags) || !strings.Contains(err.Error(), "container node ran "+pinnedImage) || !strings.Contains(err.Error(), "--allow-mutable-tags") {
		t.Fatalf("a tag-only imageID was not refused as it should be: %v", err)
	}
	dir := t.TempDir()
	paths, err := o.write(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 3 {
		t.Errorf("a refused run wrote %v; want the report, chart and log, no bundle", paths)
	}
	if _, err := os.Stat(filepath.Join(dir, evidence.BundleFile)); !os.IsNotExist(err) {
		t.Errorf("a refused run wrote a bundle: %v", err)
	}

	o = judgedHealthy(t)
	if err := o.sign(key, liveContext, deployed, pods, true); err != nil {
		t.Fatal(err)
	}
	res, err := evidence.Verify(pub, o.bundle, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Predicate; !p.MutableTagsAllowed || len(p.TagOnlyImages) != 1 || p.TagOnlyImages[0].ImageID != "us-docker.pkg.dev/example/nccl-tests:latest" || p.TagOnlyImages[0].Container != "node" {
		t.Errorf("allowed tag-only run's predicate %+v", p)
	}
}

// An unusable --sign-key is bad input, before any cluster is contacted,
// with --dry-run too; a usable one is named in the plan.
func TestSignKeyCheckedFirst(t *testing.T) {
	for name, key := range map[string]string{
		"missing":   filepath.Join(t.TempDir(), "absent.pem"),
		"encrypted": filepath.Join(keysTestdata, "ed25519-encrypted.pem"),
		"public":    filepath.Join(keysTestdata, "ed25519.pub.pem"),
		"p384":      filepath.Join(keysTestdata, "p384.pem"),
	} {
		for _, dry := range []bool{false, true} {
			args := []string{"--recipe", recipePath(declared), "--benchmark-image", pinnedImage, "--out", t.TempDir(), "--sign-key", key}
			if dry {
				args = append(args, "--dry-run")
			}
			code, _, stderr := validate(t, noConnect(t), args...)
			if code != exitUsage || !strings.Contains(stderr, "--sign-key") {
				t.Errorf("%s key (dry run %v): exit %d, want %d naming --sign-key; stderr:\n%s", name, dry, code, exitUsage, stderr)
			}
		}
	}
	f := completeCluster(t, nil)
	code, stdout, stderr := dryRun(t, f.connect, declared, "--sign-key", filepath.Join(keysTestdata, "p256.pem"))
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	contains(t, "plan", stdout, "  evidence: "+evidence.BundleFile+" in ., signed with the ECDSA P-256 key ")
}

func ptrTo[T any](v T) *T { return &v }

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
