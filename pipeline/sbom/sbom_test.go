package sbom

import (
	"bytes"
	"errors"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated/tcpxo"
)

// The daemon's purl, written out by hand from bom.yaml and the purl oci
// type: a bump of the daemon pin changes it on purpose.
const daemonPURL = "pkg:oci/tcpgpudmarxd-dev@sha256%3A8d9e10fd589a34ab8a0aa64f7e70ad075c8f1c69bea176350f8d211367697e3d" +
	"?repository_url=us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev&tag=v1.0.21"

// realInputs loads the repository the test runs in; each call is fresh, so
// a test may modify what it gets.
func realInputs(t *testing.T) Inputs {
	t.Helper()
	root, err := bom.ResolveRoot("")
	if err != nil {
		t.Fatal(err)
	}
	in, err := LoadInputs(root)
	if err != nil {
		t.Fatalf("load the repository's inputs: %v", err)
	}
	return in
}

func mustBuild(t *testing.T, in Inputs) *cdx.BOM {
	t.Helper()
	b, err := Build(in)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return b
}

func mustEncode(t *testing.T, b *cdx.BOM) []byte {
	t.Helper()
	data, err := Encode(b)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	return data
}

func encodeReal(t *testing.T) []byte {
	t.Helper()
	return mustEncode(t, mustBuild(t, realInputs(t)))
}

func decodeBOM(t *testing.T, data []byte) *cdx.BOM {
	t.Helper()
	var b cdx.BOM
	if err := cdx.NewBOMDecoder(bytes.NewReader(data), cdx.BOMFileFormatJSON).Decode(&b); err != nil {
		t.Fatalf("decode the SBOM: %v", err)
	}
	return &b
}

func props(c cdx.Component, name string) []string {
	var out []string
	if c.Properties != nil {
		for _, p := range *c.Properties {
			if p.Name == name {
				out = append(out, p.Value)
			}
		}
	}
	return out
}

func prop(t *testing.T, c cdx.Component, name string) string {
	t.Helper()
	vs := props(c, name)
	if len(vs) != 1 {
		t.Fatalf("component %s has %d %s properties %q, want 1", c.BOMRef, len(vs), name, vs)
	}
	return vs[0]
}

func byRef(t *testing.T, b *cdx.BOM, ref string) cdx.Component {
	t.Helper()
	for _, c := range *b.Components {
		if c.BOMRef == ref {
			return c
		}
	}
	t.Fatalf("no component with bom-ref %q", ref)
	return cdx.Component{}
}

func dependsOn(b *cdx.BOM, ref string) []string {
	for _, d := range *b.Dependencies {
		if d.Ref == ref && d.Dependencies != nil {
			return *d.Dependencies
		}
	}
	return nil
}

// expectedLocation applies Docker's reference normalisation, written
// independently of purl.go: a first segment without '.' or ':' that is not
// localhost is a Docker Hub path, and a one-segment Hub name is library/NAME.
func expectedLocation(repo string) string {
	first, _, hasSlash := strings.Cut(repo, "/")
	if hasSlash && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return repo
	}
	if !hasSlash {
		repo = "library/" + repo
	}
	return "docker.io/" + repo
}

func TestEveryPulledBOMImageIsListedOnceWithItsPURL(t *testing.T) {
	in := realInputs(t)
	b := mustBuild(t, in)

	containers := 0
	for _, c := range *b.Components {
		if c.Type == cdx.ComponentTypeContainer {
			containers++
		}
	}
	// Every role of the shipped tree is pulled by the runtimes or the
	// components but the gIB diagnostic image, which only the gIB NCCL
	// benchmark pulls: the SBOM lists what the runtimes and components
	// pull, so it omits it.
	roles := slices.DeleteFunc(in.BOM.ImageRoles(), func(r bom.Role) bool { return r.Name == bom.RoleGIBDiagnostic })
	if containers != len(roles) {
		t.Errorf("%d container components, want one per BOM role (%d)", containers, len(roles))
	}
	for _, r := range roles {
		var matches []cdx.Component
		for _, c := range *b.Components {
			if slices.Contains(props(c, PropRole), r.Name) {
				matches = append(matches, c)
			}
		}
		if len(matches) != 1 {
			t.Errorf("role %s: %d components, want exactly 1", r.Name, len(matches))
			continue
		}
		c := matches[0]
		p, err := checkPURL(c.PackageURL)
		if err != nil {
			t.Errorf("role %s: %v", r.Name, err)
			continue
		}
		loc := expectedLocation(r.Image.Repository())
		want := parsedPURL{
			Type: "oci", Name: loc[strings.LastIndexByte(loc, '/')+1:], Version: r.Image.Digest(),
			Qualifiers: map[string]string{"repository_url": loc, "tag": r.Image.Tag()},
		}
		if r.Image.Tag() == "" {
			delete(want.Qualifiers, "tag") // a digest-only pin has no tag to record
		}
		p.QualifierKeys = nil
		if !reflect.DeepEqual(p, want) {
			t.Errorf("role %s: purl %s parses to %+v, want %+v", r.Name, c.PackageURL, p, want)
		}
		if c.Type != cdx.ComponentTypeContainer || c.BOMRef != c.PackageURL || c.Version != r.Image.Version {
			t.Errorf("role %s: type %s, bom-ref %s, version %s", r.Name, c.Type, c.BOMRef, c.Version)
		}
		if c.Hashes == nil || len(*c.Hashes) != 1 || "sha256:"+(*c.Hashes)[0].Value != r.Image.Digest() {
			t.Errorf("role %s: hashes %v, want the manifest digest %s", r.Name, c.Hashes, r.Image.Digest())
		}
		// The installer is pulled by two init containers: still one spelling.
		if got := props(c, PropReference); !slices.Equal(got, []string{r.Image.Reference}) {
			t.Errorf("role %s: references %q, want exactly %q", r.Name, got, r.Image.Reference)
		}
		if prop(t, c, PropInBOM) != "true" || prop(t, c, PropPinned) != "true" {
			t.Errorf("role %s: inBillOfMaterials %s, pinnedByDigest %s", r.Name, prop(t, c, PropInBOM), prop(t, c, PropPinned))
		}
	}

	daemon := byRef(t, b, daemonPURL)
	if daemon.PackageURL != daemonPURL || prop(t, daemon, PropRole) != bom.RoleDaemon {
		t.Errorf("daemon component: purl %s, role %v", daemon.PackageURL, props(daemon, PropRole))
	}
	// The runtime pulls the daemon as a native sidecar, so it depends on it.
	if !slices.Contains(dependsOn(b, b.Metadata.Component.BOMRef), daemonPURL) {
		t.Errorf("the runtime does not depend on the daemon image: %v", dependsOn(b, b.Metadata.Component.BOMRef))
	}
}

// The SBOM lists what the manifests pull, not what bom.yaml says: a stray or
// unpinned image must show up, marked, and a BOM image no manifest pulls
// must not.
func TestImagesAreWhatTheManifestsPull(t *testing.T) {
	real := realInputs(t)
	imgs := real.BOM.Images
	stray := "registry.example:5000/team/sidecar:1.2@sha256:" + strings.Repeat("a", 64)
	const unpinned = "busybox:1.36"
	in := Inputs{
		BOM:   real.BOM,
		Facts: real.Facts,
		Runtime: Manifest{Kind: "ClusterTrainingRuntime", Name: "rt", Images: []string{
			imgs.Daemon.Reference, stray, imgs.Worker.Reference, unpinned,
			// The same worker image spelled with its registry: one component.
			"docker.io/" + imgs.Worker.Reference,
		}},
		Components: []Manifest{{Kind: "DaemonSet", Namespace: "ns", Name: "installer", Images: []string{
			imgs.Installer.Reference, imgs.Installer.Reference,
		}}},
	}
	b := mustBuild(t, in)

	strayPURL := "pkg:oci/sidecar@sha256%3A" + strings.Repeat("a", 64) + "?repository_url=registry.example:5000/team/sidecar&tag=1.2"
	c := byRef(t, b, strayPURL)
	if len(props(c, PropRole)) != 0 || prop(t, c, PropInBOM) != "false" || prop(t, c, PropPinned) != "true" {
		t.Errorf("stray image: roles %v, inBillOfMaterials %v", props(c, PropRole), props(c, PropInBOM))
	}
	if !slices.Contains(dependsOn(b, "manifest:ClusterTrainingRuntime/rt"), strayPURL) {
		t.Error("the runtime does not depend on the stray image it pulls")
	}

	c = byRef(t, b, "pkg:oci/busybox?repository_url=docker.io/library/busybox&tag=1.36")
	if prop(t, c, PropPinned) != "false" || c.Hashes != nil || prop(t, c, PropInBOM) != "false" {
		t.Errorf("unpinned image: pinnedByDigest %v, hashes %v", props(c, PropPinned), c.Hashes)
	}

	var workers []cdx.Component
	for _, c := range *b.Components {
		if slices.Contains(props(c, PropRole), bom.RoleWorker) {
			workers = append(workers, c)
		}
	}
	if len(workers) != 1 || len(props(workers[0], PropReference)) != 2 {
		t.Fatalf("worker pulled under two spellings: %d components, want 1 recording both spellings", len(workers))
	}

	for _, r := range []bom.Image{imgs.Pause, imgs.NRIInjector} {
		for _, c := range *b.Components {
			if slices.Contains(props(c, PropReference), r.Reference) {
				t.Errorf("%s is listed though no manifest pulls it", r.Reference)
			}
		}
	}
	var containers int
	for _, c := range *b.Components {
		if c.Type == cdx.ComponentTypeContainer {
			containers++
		}
	}
	if containers != 5 { // daemon, stray, worker, busybox, installer
		t.Errorf("%d container components, want 5", containers)
	}
	if errs := checkStructure(decodeBOM(t, mustEncode(t, b))); len(errs) > 0 {
		t.Errorf("structure: %s", strings.Join(errs, "\n"))
	}
}

func TestVersionsOfThePayload(t *testing.T) {
	in := realInputs(t)
	b := mustBuild(t, in)

	// The facts are parsed from the committed file; the compiled constants
	// are an independent reading of the same file.
	plugin, nccl := byRef(t, b, refNCCLPlugin), byRef(t, b, refNCCLCore)
	if plugin.Version != tcpxo.PluginVersion || plugin.Type != cdx.ComponentTypeLibrary {
		t.Errorf("NCCL plugin: %s %s, want library %s", plugin.Type, plugin.Version, tcpxo.PluginVersion)
	}
	if nccl.Version != tcpxo.NCCLVersion || nccl.Type != cdx.ComponentTypeLibrary {
		t.Errorf("NCCL core: %s %s, want library %s", nccl.Type, nccl.Version, tcpxo.NCCLVersion)
	}
	if got, want := props(plugin, PropPluginFile), tcpxo.PluginFiles(); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("plugin files %q, want %q", got, want)
	}
	// The libraries are what the installer image delivers.
	installer := byRef(t, b, mustPURL(t, in.BOM.Images.Installer.Reference))
	if got := dependsOn(b, installer.BOMRef); !slices.Equal(got, []string{refNCCLCore, refNCCLPlugin}) {
		t.Errorf("installer image depends on %v, want the NCCL core and plugin", got)
	}

	const trainerPURL = "pkg:golang/github.com/kubeflow/trainer/v2@v2.2.0"
	tr := byRef(t, b, trainerPURL)
	if tr.PackageURL != trainerPURL || tr.Version != in.BOM.Trainer.Version || tr.Name != in.BOM.Trainer.Module || tr.Type != cdx.ComponentTypeFramework {
		t.Errorf("trainer: %+v", tr)
	}
	if prop(t, tr, PropControllerImage) != in.BOM.Trainer.ControllerImage {
		t.Errorf("trainer controller image %q", prop(t, tr, PropControllerImage))
	}
	js := byRef(t, b, "pkg:golang/"+in.BOM.JobSet.Module+"@"+in.BOM.JobSet.ModuleVersion)
	if js.Version != in.BOM.JobSet.ModuleVersion || prop(t, js, PropControllerVersion) != in.BOM.JobSet.ControllerVersion {
		t.Errorf("jobset: %+v", js)
	}
	if got := dependsOn(b, trainerPURL); !slices.Equal(got, []string{js.BOMRef}) {
		t.Errorf("trainer depends on %v, want jobset", got)
	}
	if !slices.Contains(dependsOn(b, b.Metadata.Component.BOMRef), trainerPURL) {
		t.Error("the runtime does not depend on the trainer")
	}
}

func mustPURL(t *testing.T, ref string) string {
	t.Helper()
	r, err := parseImageRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	return r.purl()
}

func metadataProps(b *cdx.BOM) map[string][]string {
	out := map[string][]string{}
	for _, p := range *b.Metadata.Properties {
		out[p.Name] = append(out[p.Name], p.Value)
	}
	return out
}

func TestProvenanceIsRecorded(t *testing.T) {
	in := realInputs(t)
	b := mustBuild(t, in)
	got := metadataProps(b)
	for name, want := range map[string]string{
		PropProvenancePinned:        tcpxo.ProvenancePinned,
		PropProvenanceSource:        tcpxo.ProvenanceSource,
		PropProvenanceKind:          tcpxo.ProvenanceKind,
		PropProvenanceRead:          tcpxo.ProvenanceRead,
		PropProvenanceDigest:        tcpxo.ProvenanceDigest,
		PropProvenanceSubstituted:   strconv.FormatBool(tcpxo.ProvenanceSubstituted),
		PropProvenanceDefaultSHA256: tcpxo.ProvenanceDefaultProfileSHA256,
		PropProvenanceSimpleSHA256:  tcpxo.ProvenanceSimpleProfileSHA256,
	} {
		if !slices.Equal(got[name], []string{want}) {
			t.Errorf("metadata property %s = %q, want %q", name, got[name], want)
		}
	}
	// The committed data comes from the bundled reconstruction, a substitute
	// for the pinned image; the SBOM must say so, document-wide and on each
	// component whose version was extracted.
	if tcpxo.ProvenanceKind == "testdata" {
		if !slices.Equal(got[PropProvenanceSubstituted], []string{"true"}) {
			t.Errorf("reconstruction data: substituted = %q, want true", got[PropProvenanceSubstituted])
		}
		for _, ref := range []string{refNCCLPlugin, refNCCLCore} {
			if v := prop(t, byRef(t, b, ref), PropProvenanceSubstituted); v != "true" {
				t.Errorf("%s: substituted = %s, want true", ref, v)
			}
		}
	}

	// Data read from the pinned image says so too.
	f := *in.Facts
	f.Provenance.Substituted, f.Provenance.Kind = false, "registry"
	in.Facts = &f
	b = mustBuild(t, in)
	if got := metadataProps(b); !slices.Equal(got[PropProvenanceSubstituted], []string{"false"}) || !slices.Equal(got[PropProvenanceKind], []string{"registry"}) {
		t.Errorf("pinned-image data: substituted %q, kind %q", got[PropProvenanceSubstituted], got[PropProvenanceKind])
	}
	if v := prop(t, byRef(t, b, refNCCLCore), PropProvenanceSubstituted); v != "false" {
		t.Errorf("pinned-image data: NCCL core substituted = %s", v)
	}
}

func TestOutputIsDeterministic(t *testing.T) {
	first, second := encodeReal(t), encodeReal(t)
	if !bytes.Equal(first, second) {
		t.Fatal("two builds from the same tree differ")
	}
	for _, forbidden := range []string{`"timestamp"`} {
		if bytes.Contains(first, []byte(forbidden)) {
			t.Errorf("output contains %s", forbidden)
		}
	}

	// Input order does not matter: components and the graph are sorted.
	in := realInputs(t)
	slices.Reverse(in.Runtime.Images)
	slices.Reverse(in.Components)
	for i := range in.Components {
		slices.Reverse(in.Components[i].Images)
	}
	f := *in.Facts
	f.PluginFiles = slices.Clone(f.PluginFiles)
	slices.Reverse(f.PluginFiles)
	in.Facts = &f
	if !bytes.Equal(mustEncode(t, mustBuild(t, in)), first) {
		t.Error("reordering the inputs changed the output")
	}

	// The serial is a v8 UUID of the content: stable for the same content,
	// different for different content.
	serial := decodeBOM(t, first).SerialNumber
	if !regexp.MustCompile(`^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(serial) {
		t.Errorf("serial %s is not an RFC 9562 version-8 UUID URN", serial)
	}
	in = realInputs(t)
	f = *in.Facts
	f.NCCLVersion = "2.99.0"
	in.Facts = &f
	if other := mustBuild(t, in).SerialNumber; other == serial {
		t.Error("different content got the same serial number")
	}
}

func TestEncodeRoundTrips(t *testing.T) {
	b := mustBuild(t, realInputs(t))
	data := mustEncode(t, b)
	if !bytes.HasSuffix(data, []byte("}\n")) || bytes.HasSuffix(data, []byte("\n\n")) {
		t.Errorf("output does not end in exactly one newline: %q", data[len(data)-5:])
	}
	if !bytes.Contains(data, []byte("\n  \"bomFormat\": \"CycloneDX\",\n")) {
		t.Error("output is not pretty-printed with two-space indentation")
	}
	if bytes.Contains(data, []byte(`\u0026`)) {
		t.Error("purls are HTML-escaped")
	}
	got := decodeBOM(t, data)
	if got.BOMFormat != cdx.BOMFormat || got.SpecVersion != cdx.SpecVersion1_6 || got.Version != 1 ||
		got.SerialNumber != b.SerialNumber || got.JSONSchema != schemaURL {
		t.Errorf("header: %s %s v%d %s %s", got.BOMFormat, got.SpecVersion, got.Version, got.SerialNumber, got.JSONSchema)
	}
	for name, pair := range map[string][2]any{
		"metadata":     {b.Metadata, got.Metadata},
		"components":   {b.Components, got.Components},
		"dependencies": {b.Dependencies, got.Dependencies},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("%s changed in the round trip:\n built %+v\n decoded %+v", name, pair[0], pair[1])
		}
	}
	// Re-encoding the decoded document reproduces the bytes.
	if again := mustEncode(t, got); !bytes.Equal(again, data) {
		t.Error("decode then encode does not reproduce the document")
	}
}

func TestOutputValidates(t *testing.T) {
	data := encodeReal(t)
	errs, err := cycloneDX16(t).Validate(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) > 0 {
		t.Errorf("the SBOM violates the CycloneDX 1.6 schema:\n%s", strings.Join(errs, "\n"))
	}
	if errs := checkStructure(decodeBOM(t, data)); len(errs) > 0 {
		t.Errorf("the SBOM is structurally broken:\n%s", strings.Join(errs, "\n"))
	}
}

func TestBuildRejectsWhatItCannotDescribe(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(in *Inputs)
		want   string
		is     error
	}{
		"no BOM":   {func(in *Inputs) { in.BOM = nil }, "no bill of materials", nil},
		"no facts": {func(in *Inputs) { in.Facts = nil }, "no generated facts", nil},
		"facts for another installer": {func(in *Inputs) {
			f := *in.Facts
			f.Provenance.Pinned = strings.Replace(f.Provenance.Pinned, "v1.0.15", "v1.0.14", 1)
			in.Facts = &f
		}, "go generate", ErrStaleFacts},
		"no NCCL version": {func(in *Inputs) {
			f := *in.Facts
			f.NCCLVersion = ""
			in.Facts = &f
		}, "NCCL version", nil},
		"unparseable image": {func(in *Inputs) {
			in.Components[0].Images = append(in.Components[0].Images, "Not A Reference")
		}, "Not A Reference", nil},
		"empty image": {func(in *Inputs) { in.Runtime.Images = append(in.Runtime.Images, "") }, "ClusterTrainingRuntime", nil},
		"sha512 digest": {func(in *Inputs) {
			in.Runtime.Images = append(in.Runtime.Images, "busybox@sha512:"+strings.Repeat("a", 128))
		}, "sha256", nil},
		"manifest listed twice": {func(in *Inputs) { in.Components = append(in.Components, in.Components[0]) }, "listed twice", nil},
		"nameless manifest":     {func(in *Inputs) { in.Components[0].Name = "" }, "no kind or name", nil},
	} {
		t.Run(name, func(t *testing.T) {
			in := realInputs(t)
			tc.mutate(&in)
			b, err := Build(in)
			if err == nil || b != nil {
				t.Fatalf("Build succeeded; want an error mentioning %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q does not wrap %v", err, tc.is)
			}
		})
	}
}

func TestEncodeRefusesOtherVersions(t *testing.T) {
	if _, err := Encode(nil); err == nil {
		t.Error("Encode(nil) succeeded")
	}
	b := mustBuild(t, realInputs(t))
	b.SpecVersion = cdx.SpecVersion1_5
	if _, err := Encode(b); err == nil || !strings.Contains(err.Error(), "1.6") {
		t.Errorf("Encode of a 1.5 document: %v, want a refusal naming 1.6", err)
	}
}

func TestPURLs(t *testing.T) {
	digest := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	enc := "sha256%3A" + strings.Repeat("0123456789abcdef", 4)
	for ref, want := range map[string]string{
		"debian@" + digest:                      "pkg:oci/debian@" + enc + "?repository_url=docker.io/library/debian",
		"index.docker.io/library/debian:12":     "pkg:oci/debian?repository_url=docker.io/library/debian&tag=12",
		"localhost:5000/a/b:1.0@" + digest:      "pkg:oci/b@" + enc + "?repository_url=localhost:5000/a/b&tag=1.0",
		"ghcr.io/org/team/tool:v1_2-rc.3":       "pkg:oci/tool?repository_url=ghcr.io/org/team/tool&tag=v1_2-rc.3",
		"gke.gcr.io/pause:3.8@" + digest:        "pkg:oci/pause@" + enc + "?repository_url=gke.gcr.io/pause&tag=3.8",
		"registry.example/deep/x/y/z@" + digest: "pkg:oci/z@" + enc + "?repository_url=registry.example/deep/x/y/z",
	} {
		r, err := parseImageRef(ref)
		if err != nil {
			t.Errorf("%s: %v", ref, err)
			continue
		}
		if got := r.purl(); got != want {
			t.Errorf("%s:\n got %s\nwant %s", ref, got, want)
		}
		if _, err := checkPURL(r.purl()); err != nil {
			t.Errorf("%s: %v", ref, err)
		}
	}
	for module, want := range map[string]string{
		"github.com/kubeflow/trainer/v2": "pkg:golang/github.com/kubeflow/trainer/v2@v2.2.0",
		"example.com/a+b":                "pkg:golang/example.com/a%2Bb@v2.2.0",
	} {
		got := golangPURL(module, "v2.2.0")
		if got != want {
			t.Errorf("%s: got %s, want %s", module, got, want)
		}
		p, err := checkPURL(got)
		if err != nil || p.Namespace+"/"+p.Name != module {
			t.Errorf("%s: %s parses back to %q/%q (%v)", module, got, p.Namespace, p.Name, err)
		}
	}
}
