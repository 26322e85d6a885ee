package bom

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/tcpxogen/tcpxogen/internal/inputfile"
)

const (
	installerDigest = "sha256:4c9f0de3f39455a2ea35e844e0fc92564ca5629f6b03250fde40e8160719dae4"
	daemonDigest    = "sha256:8d9e10fd589a34ab8a0aa64f7e70ad075c8f1c69bea176350f8d211367697e3d"
	pauseDigest     = "sha256:880e63f94b145e46f1b1082bb71b85e21f16b99b180b9996407d61240ceb9830"
	daemonRepo      = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev"
)

// testBOM is a valid bom.yaml whose line numbers the rejection cases rely on.
const testBOM = `images:
  installer:
    reference: us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.15@` + installerDigest + `
    version: v1.0.15
  daemon:
    reference: ` + daemonRepo + `:v1.0.21@` + daemonDigest + `
    version: v1.0.21
  nriInjector:
    reference: gcr.io/gke-release/nri-device-injector:1.0.25-gke.6@sha256:7704e2bd74b8edbb76b6913c7904cc2362f1fa887c4d4aba7b19778ea353537c
    version: 1.0.25-gke.6
  pause:
    reference: gke.gcr.io/pause:3.8@` + pauseDigest + `
    version: "3.8"
  worker:
    reference: pytorch/pytorch:2.11.0-cuda12.8-cudnn9-runtime@sha256:eee11b3b3872a8c838e35ef48f08b2d5def2080902c7f666831310ca1a0ef2be
    version: 2.11.0-cuda12.8-cudnn9-runtime
    cudaMajor: 12
  gibInstaller:
    reference: us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.2@sha256:b71627dcf88862cd0e64434dfd0224441960db58f2022f94b5f56123659c207e
    version: v1.1.2
  gibDiagnostic:
    reference: us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib-diagnostic:v1.1.2@sha256:61c917022538e59d24f597038a8ad7087a026d60715256ae39e7f06ef20ebde0
    version: v1.1.2
trainer:
  module: github.com/kubeflow/trainer/v2
  version: v2.2.0
  controllerImage: ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.2.0
jobset:
  module: sigs.k8s.io/jobset
  moduleVersion: v0.11.1
  controllerVersion: v0.11.0
`

// edit replaces old with new in s, failing the test unless old occurs exactly
// once, so a case whose edit no longer applies cannot pass by testing nothing.
func edit(t *testing.T, s, old, new string) string {
	t.Helper()
	if n := strings.Count(s, old); n != 1 {
		t.Fatalf("edit: %q occurs %d times in the fixture, want 1", old, n)
	}
	return strings.Replace(s, old, new, 1)
}

type edits [][2]string

func (e edits) apply(t *testing.T, s string) string {
	t.Helper()
	for _, r := range e {
		s = edit(t, s, r[0], r[1])
	}
	return s
}

// fieldErrors flattens a joined error into its FieldErrors, failing on anything else.
func fieldErrors(t *testing.T, err error) []*FieldError {
	t.Helper()
	var out []*FieldError
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Fatalf("error %q is not a *FieldError", err)
		}
		out = append(out, fe)
	}
	walk(err)
	return out
}

func TestParseAcceptsFixture(t *testing.T) {
	b, err := Parse("bom.yaml", []byte(testBOM))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	d := b.Images.Daemon
	if d.Repository() != daemonRepo || d.Tag() != "v1.0.21" || d.Digest() != daemonDigest {
		t.Errorf("daemon parts = %q %q %q", d.Repository(), d.Tag(), d.Digest())
	}
	if b.Path != "bom.yaml" {
		t.Errorf("Path = %q, want bom.yaml", b.Path)
	}
	if b.Trainer.ControllerImage != "ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.2.0" || b.JobSet.ControllerVersion != "v0.11.0" {
		t.Errorf("trainer/jobset not decoded: %+v %+v", b.Trainer, b.JobSet)
	}
}

func TestParseRejects(t *testing.T) {
	cases := []struct {
		name  string
		doc   string // used instead of the fixture when set
		edits edits
		want  []string // every fragment must appear; the first carries file:line
	}{
		{name: "unknown top-level field", edits: edits{{"jobset:\n", "extra: 1\njobset:\n"}},
			want: []string{"bom.yaml:28: extra is not a known field", "fields allowed in the top level: images, trainer, jobset"}},
		{name: "unknown nested field with suggestion", edits: edits{{"    version: v1.0.21\n", "    version: v1.0.21\n    refernce: x\n"}},
			want: []string{`bom.yaml:8: images.daemon.refernce is not a known field: did you mean "reference"?`, "fields allowed in images.daemon: reference, version"}},
		{name: "unknown field differing only in case", edits: edits{{"  nriInjector:", "  nriinjector:"}},
			want: []string{`bom.yaml:8: images.nriinjector is not a known field: did you mean "nriInjector"?`}},
		{name: "unknown field without close match", edits: edits{{"  module: sigs.k8s.io/jobset\n", "  module: sigs.k8s.io/jobset\n  helmChart: x\n"}},
			want: []string{"bom.yaml:30: jobset.helmChart is not a known field: remove it, or correct its name (fields allowed in jobset: module, moduleVersion, controllerVersion)"}},
		{name: "Path is not a file field", edits: edits{{"jobset:\n", "path: x\njobset:\n"}},
			want: []string{"bom.yaml:28: path is not a known field"}},
		{name: "duplicate nested key", edits: edits{{"    version: v1.0.21\n", "    version: v1.0.21\n    version: v1.0.21\n"}},
			want: []string{"bom.yaml:8: images.daemon.version is defined twice (first at line 7): delete one of the two"}},
		{name: "duplicate top-level key", edits: edits{{"jobset:\n", "trainer:\n  module: x\njobset:\n"}},
			want: []string{"bom.yaml:28: trainer is defined twice (first at line 24)"}},
		{name: "worker without CUDA major", edits: edits{{"    cudaMajor: 12\n", ""}},
			want: []string{"images.worker.cudaMajor", "must equal the installer's"}},
		{name: "CUDA major on another role", edits: edits{{"    version: v1.0.21\n", "    version: v1.0.21\n    cudaMajor: 12\n"}},
			want: []string{"images.daemon.cudaMajor only the worker image declares a CUDA major"}},
		{name: "empty file", doc: "", want: []string{"bom.yaml: holds no data: write a mapping with the keys images, trainer, jobset"}},
		{name: "comments only", doc: "# nothing\n", want: []string{"bom.yaml: holds no data"}},
		{name: "explicit empty document", doc: "---\n", want: []string{"bom.yaml:1: holds no data"}},
		{name: "second document", edits: edits{{"  controllerVersion: v0.11.0\n", "  controllerVersion: v0.11.0\n---\nimages: {}\n"}},
			want: []string{"bom.yaml:32: a second YAML document starts here: keep exactly one document per file"}},
		{name: "document is a list", doc: "- images\n", want: []string{"bom.yaml:1: the document must be a mapping, not a list"}},
		{name: "section has the wrong kind", edits: edits{{"    version: v1.0.21\n", "    version: [v1.0.21]\n"}},
			want: []string{"bom.yaml:7: images.daemon.version must be a single value, not a list"}},
		{name: "image is a scalar", edits: edits{{"  worker:\n    reference: pytorch/pytorch:2.11.0-cuda12.8-cudnn9-runtime@sha256:eee11b3b3872a8c838e35ef48f08b2d5def2080902c7f666831310ca1a0ef2be\n    version: 2.11.0-cuda12.8-cudnn9-runtime\n    cudaMajor: 12\n", "  worker: pytorch/pytorch\n"}},
			want: []string{"bom.yaml:14: images.worker must be a mapping, not a string", "(keys: reference, version, source, cudaMajor)"}},
		{name: "missing image role", edits: edits{{"  pause:\n    reference: gke.gcr.io/pause:3.8@" + pauseDigest + "\n    version: \"3.8\"\n", ""}},
			want: []string{"bom.yaml:1: images.pause is missing: add pause: {reference: repo:tag@sha256:<64 hex>, version: tag}"}},
		{name: "image role without value", edits: edits{{"  pause:\n    reference: gke.gcr.io/pause:3.8@" + pauseDigest + "\n    version: \"3.8\"\n", "  pause:\n"}},
			want: []string{"bom.yaml:11: images.pause is empty"}},
		{name: "missing reference", edits: edits{{"    reference: gcr.io/gke-release/nri-device-injector:1.0.25-gke.6@sha256:7704e2bd74b8edbb76b6913c7904cc2362f1fa887c4d4aba7b19778ea353537c\n", ""}},
			want: []string{"bom.yaml:8: images.nriInjector.reference is missing: pin the image as repo:tag@sha256:<64 hex>"}},
		{name: "empty version", edits: edits{{"    version: v1.0.21\n", "    version:\n"}},
			want: []string{`bom.yaml:7: images.daemon.version is empty: set it to "v1.0.21", the reference's tag`}},
		{name: "missing trainer section", edits: edits{{"trainer:\n  module: github.com/kubeflow/trainer/v2\n  version: v2.2.0\n  controllerImage: ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.2.0\n", ""}},
			want: []string{"bom.yaml:1: trainer is missing: add trainer: with module, version and controllerImage"}},
		{name: "empty jobset field", edits: edits{{"  controllerVersion: v0.11.0\n", "  controllerVersion: \"\"\n"}},
			want: []string{"bom.yaml:31: jobset.controllerVersion is empty"}},
		{name: "reference without digest", edits: edits{{"@" + daemonDigest, ""}},
			want: []string{`bom.yaml:6: images.daemon.reference "` + daemonRepo + `:v1.0.21" has no digest: pin it as repo:tag@sha256:<64 hex> (find the digest with: crane digest ` + daemonRepo + `:v1.0.21)`}},
		{name: "digest too short", edits: edits{{daemonDigest, daemonDigest[:len(daemonDigest)-1]}},
			want: []string{"bom.yaml:6: images.daemon.reference", "digest has 63 hex characters, want 64", "crane digest " + daemonRepo + ":v1.0.21"}},
		{name: "digest too long", edits: edits{{daemonDigest, daemonDigest + "0"}},
			want: []string{"bom.yaml:6: images.daemon.reference", "digest has 65 hex characters, want 64"}},
		{name: "uppercase digest", edits: edits{{daemonDigest, strings.ToUpper(daemonDigest[:7]) + daemonDigest[7:8] + strings.ToUpper(daemonDigest[8:])}},
			want: []string{`bom.yaml:6: images.daemon.reference`, `digest algorithm "SHA256" is not sha256`}},
		{name: "uppercase digest hex", edits: edits{{daemonDigest, "sha256:" + strings.ToUpper(daemonDigest[7:])}},
			want: []string{"bom.yaml:6: images.daemon.reference", "digest has uppercase hex; digests are lowercase"}},
		{name: "non-hex digest", edits: edits{{daemonDigest, daemonDigest[:len(daemonDigest)-1] + "g"}},
			want: []string{"bom.yaml:6: images.daemon.reference", "digest has characters that are not hex digits"}},
		{name: "sha512 digest", edits: edits{{daemonDigest, "sha512:" + daemonDigest[7:]}},
			want: []string{"bom.yaml:6: images.daemon.reference", `digest algorithm "sha512" is not sha256`}},
		{name: "digest without algorithm", edits: edits{{daemonDigest, daemonDigest[7:]}},
			want: []string{"bom.yaml:6: images.daemon.reference", "has no algorithm; want sha256:<64 hex>"}},
		{name: "reference without tag", edits: edits{{"gke.gcr.io/pause:3.8@", "gke.gcr.io/pause@"}},
			want: []string{`bom.yaml:12: images.pause.reference "gke.gcr.io/pause@` + pauseDigest + `" has no tag: write it as repo:TAG@sha256:<64 hex>, so the version is visible`}},
		{name: "registry port is not a tag", edits: edits{{"gke.gcr.io/pause:3.8@", "localhost:5000/pause@"}},
			want: []string{"bom.yaml:12: images.pause.reference", "has no tag"}},
		{name: "reference that does not parse", edits: edits{{"gke.gcr.io/pause:3.8@", "gke.gcr.io/Pause:3.8@"}},
			want: []string{"bom.yaml:12: images.pause.reference", "is not a valid image reference", "repositories are lowercase"}},
		{name: "two digests", edits: edits{{"gke.gcr.io/pause:3.8@", "gke.gcr.io/pause:3.8@" + pauseDigest + "@"}},
			want: []string{"bom.yaml:12: images.pause.reference", "has more than one '@'"}},
		{name: "version is a release candidate's prefix", edits: edits{{":v1.0.21@", ":v1.0.21-rc1@"}},
			want: []string{`bom.yaml:7: images.daemon.version "v1.0.21" does not match the reference's tag "v1.0.21-rc1": set version to exactly "v1.0.21-rc1"`}},
		{name: "version has a suffix the tag lacks", edits: edits{{"    version: v1.0.21\n", "    version: v1.0.21-rc1\n"}},
			want: []string{`bom.yaml:7: images.daemon.version "v1.0.21-rc1" does not match the reference's tag "v1.0.21"`}},
		{name: "version drops a revision suffix", edits: edits{{":v1.0.21@", ":v1.0.9-1@"}, {"    version: v1.0.21\n", "    version: v1.0.9\n"}},
			want: []string{`bom.yaml:7: images.daemon.version "v1.0.9" does not match the reference's tag "v1.0.9-1"`}},
		{name: "version drops a leading zero", edits: edits{{":v1.0.21@", ":v1.0.09@"}, {"    version: v1.0.21\n", "    version: v1.0.9\n"}},
			want: []string{`bom.yaml:7: images.daemon.version "v1.0.9" does not match the reference's tag "v1.0.09"`}},
		{name: "controller tag disagrees with trainer version", edits: edits{{"trainer-controller-manager:v2.2.0", "trainer-controller-manager:v2.1.0"}},
			want: []string{`bom.yaml:27: trainer.controllerImage tag "v2.1.0" does not match trainer.version "v2.2.0"`}},
		{name: "controller image without tag", edits: edits{{"trainer-controller-manager:v2.2.0", "trainer-controller-manager"}},
			want: []string{"bom.yaml:27: trainer.controllerImage", "has no tag"}},
		{name: "controller image with bad digest", edits: edits{{"trainer-controller-manager:v2.2.0", "trainer-controller-manager:v2.2.0@sha256:abc"}},
			want: []string{"bom.yaml:27: trainer.controllerImage", "digest has 3 hex characters, want 64"}},
		{name: "module version without v", edits: edits{{"  moduleVersion: v0.11.1\n", "  moduleVersion: 0.11.1\n"}},
			want: []string{`bom.yaml:30: jobset.moduleVersion "0.11.1" is not a Go module version: write it as vMAJOR.MINOR.PATCH`}},
		{name: "module path without major suffix", edits: edits{{"  module: github.com/kubeflow/trainer/v2\n", "  module: github.com/kubeflow/trainer\n"}},
			want: []string{`bom.yaml:25: trainer.module "github.com/kubeflow/trainer" does not match major version v2 of trainer.version`, `use "github.com/kubeflow/trainer/v2"`}},
		{name: "module path with stale major suffix", edits: edits{{"  version: v2.2.0\n", "  version: v3.0.0\n"}, {"manager:v2.2.0", "manager:v3.0.0"}},
			want: []string{`bom.yaml:25: trainer.module "github.com/kubeflow/trainer/v2" does not match major version v3`, `use "github.com/kubeflow/trainer/v3"`}},
		{name: "not a module path", edits: edits{{"  module: sigs.k8s.io/jobset\n", "  module: jobset\n"}},
			want: []string{`bom.yaml:29: jobset.module "jobset" is not a Go module path`}},
		{name: "tab indentation", edits: edits{{"    version: v1.0.21\n", "\tversion: v1.0.21\n"}},
			want: []string{"bom.yaml:7: is not valid YAML", "indent with spaces"}},
		{name: "unquoted colon in value", edits: edits{{"    version: v1.0.21\n", "    version: v1: 0.21\n"}},
			want: []string{"bom.yaml:7: is not valid YAML (mapping values are not allowed in this context)", "quote the value"}},
		{name: "syntax error on the first line", doc: "images: a: b\n",
			want: []string{"bom.yaml:1: is not valid YAML"}},
		{name: "unclosed flow mapping", edits: edits{{"  controllerVersion: v0.11.0\n", "  controllerVersion: {v0.11.0\n"}},
			want: []string{"bom.yaml:31: is not valid YAML"}},
		{name: "syntax error in a second document", edits: edits{{"  controllerVersion: v0.11.0\n", "  controllerVersion: v0.11.0\n---\na: [\n"}},
			want: []string{"bom.yaml:33: is not valid YAML"}},
		{name: "unknown anchor", edits: edits{{"    version: v1.0.21\n", "    version: *v\n"}},
			want: []string{"bom.yaml:7: is not valid YAML (unknown anchor 'v' referenced)", "define the anchor"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.doc
			if doc == "" && tc.edits != nil {
				doc = tc.edits.apply(t, testBOM)
			}
			b, err := Parse("bom.yaml", []byte(doc))
			if err == nil {
				t.Fatalf("Parse accepted the document: %+v", b)
			}
			if b != nil {
				t.Errorf("Parse returned a BOM along with an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
			for _, fe := range fieldErrors(t, err) {
				if fe.File != "bom.yaml" || fe.Fix == "" {
					t.Errorf("rejection without file or fix: %#v", fe)
				}
			}
		})
	}
}

func TestParseReportsEveryProblemInFileOrder(t *testing.T) {
	doc := edits{
		{"  moduleVersion: v0.11.1\n", "  moduleVersion: 0.11.1\n"},
		{"@" + daemonDigest, ""},
		{"    version: \"3.8\"\n", "    version: \"3.9\"\n"},
	}.apply(t, testBOM)
	_, err := Parse("bom.yaml", []byte(doc))
	if err == nil {
		t.Fatal("Parse accepted three problems")
	}
	var got []string
	for _, fe := range fieldErrors(t, err) {
		got = append(got, fe.Path)
		if fe.Line == 0 {
			t.Errorf("%s: no line", fe.Path)
		}
	}
	want := []string{"images.daemon.reference", "images.pause.version", "jobset.moduleVersion"}
	if !slices.Equal(got, want) {
		t.Errorf("fields = %v, want %v (in line order)", got, want)
	}
}

func TestParseStructuralErrorsAreAllReported(t *testing.T) {
	doc := edits{
		{"jobset:\n", "extra: 1\njobset:\n"},
		{"    version: v1.0.21\n", "    version: v1.0.21\n    tag: x\n"},
	}.apply(t, testBOM)
	_, err := Parse("bom.yaml", []byte(doc))
	if err == nil {
		t.Fatal("Parse accepted two unknown fields")
	}
	var got []string
	for _, fe := range fieldErrors(t, err) {
		got = append(got, fe.Path)
	}
	if want := []string{"images.daemon.tag", "extra"}; !slices.Equal(got, want) {
		t.Errorf("fields = %v, want %v", got, want)
	}
}

func TestParseAcceptsIrregularTags(t *testing.T) {
	for _, tag := range []string{"v1.0.9-1", "v1.0.13_1", "v1.0.09", "v1.0.21-rc1"} {
		t.Run(tag, func(t *testing.T) {
			doc := edits{{":v1.0.21@", ":" + tag + "@"}, {"    version: v1.0.21\n", "    version: " + tag + "\n"}}.apply(t, testBOM)
			b, err := Parse("bom.yaml", []byte(doc))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if d := b.Images.Daemon; d.Version != tag || d.Tag() != tag {
				t.Errorf("version %q, tag %q; want both %q", d.Version, d.Tag(), tag)
			}
		})
	}
}

func TestParseAcceptsOtherValidForms(t *testing.T) {
	cases := map[string]edits{
		"unquoted numeric-looking version": {{"    version: \"3.8\"\n", "    version: 3.8\n"}},
		"registry with port":               {{"gke.gcr.io/pause:3.8@", "localhost:5000/pause:3.8@"}},
		"controller image with digest":     {{"manager:v2.2.0\n", "manager:v2.2.0@" + pauseDigest + "\n"}},
		"flow-style image":                 {{"  pause:\n    reference: gke.gcr.io/pause:3.8@" + pauseDigest + "\n    version: \"3.8\"\n", "  pause: {reference: \"gke.gcr.io/pause:3.8@" + pauseDigest + "\", version: \"3.8\"}\n"}},
		"comments and blank lines":         {{"trainer:\n", "\n# the trainer\ntrainer: # pinned\n"}},
	}
	for name, e := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse("bom.yaml", []byte(e.apply(t, testBOM))); err != nil {
				t.Fatalf("Parse: %v", err)
			}
		})
	}
}

func TestImageRolesOrderAndContent(t *testing.T) {
	b, err := Parse("bom.yaml", []byte(testBOM))
	if err != nil {
		t.Fatal(err)
	}
	roles := b.ImageRoles()
	var names []string
	for _, r := range roles {
		names = append(names, r.Name)
		if r.Image.Digest() == "" || r.Image.Version != r.Image.Tag() {
			t.Errorf("role %s: image not parsed: %+v", r.Name, r.Image)
		}
	}
	if want := []string{RoleInstaller, RoleDaemon, RoleNRIInjector, RolePause, RoleWorker, RoleGIBInstaller, RoleGIBDiagnostic}; !slices.Equal(names, want) {
		t.Errorf("roles = %v, want %v", names, want)
	}
	if roles[1].Image != b.Images.Daemon || roles[3].Image != b.Images.Pause {
		t.Errorf("roles do not carry the BOM's images")
	}
	roles[0].Image.Reference = "changed"
	if b.Images.Installer.Reference == "changed" {
		t.Errorf("ImageRoles exposes the BOM's images to mutation")
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Load error %v does not wrap os.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), "pass the path to bom/bom.yaml") {
		t.Errorf("Load error does not say how to fix it: %v", err)
	}
}

func TestParseRejectsOversizedInput(t *testing.T) {
	doc := testBOM + "# " + strings.Repeat("x", maxFileSize) + "\n"
	_, err := Parse("bom.yaml", []byte(doc))
	if err == nil || !strings.Contains(err.Error(), "larger than the") {
		t.Fatalf("Parse error = %v, want a size rejection", err)
	}
}

func TestLoadUsesPathInMessages(t *testing.T) {
	p := filepath.Join(t.TempDir(), "my-bom.yaml")
	if err := os.WriteFile(p, []byte(edit(t, testBOM, "@"+daemonDigest, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	if err == nil || !strings.HasPrefix(err.Error(), p+":6: ") {
		t.Fatalf("Load error = %v, want it to start with %s:6:", err, p)
	}
}

func TestSyntaxErrorLineInHugeFile(t *testing.T) {
	// Past the prefix-scan budget the parser's own line is used; for a
	// scanner error like a tab it is exact.
	doc := strings.Repeat("# padding\n", 20000) + "images:\n\tinstaller: x\n"
	_, err := Parse("bom.yaml", []byte(doc))
	if err == nil || !strings.Contains(err.Error(), "bom.yaml:20002: is not valid YAML") {
		t.Fatalf("Parse error = %v, want the tab reported at line 20002", err)
	}
}

// The loaders read data files through the input helper: a FIFO is refused
// instead of blocking forever, and a data file linked outside its directory
// is refused instead of read and quoted back in errors.
func TestLoadRefusesHostileFiles(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "bom")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "bom.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(fifo); !errors.Is(err, inputfile.ErrNotRegular) {
		t.Errorf("Load(FIFO) = %v, want a refusal", err)
	}
	secret := filepath.Join(root, "credentials")
	if err := os.WriteFile(secret, []byte("token: hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "releases.yaml")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	_, err := LoadReleases(link)
	if !errors.Is(err, inputfile.ErrOutside) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("LoadReleases(link to a secret) = %v, want a refusal that quotes nothing of it", err)
	}
}
