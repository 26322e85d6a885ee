// Package sbom describes what tcpxogen ships as a CycloneDX 1.6 software bill
// of materials: every container image the shipped manifests pull (pkg:oci
// purls pinned by digest), the NCCL plugin and NCCL core the installer puts
// on the node, the Kubeflow Trainer and JobSet modules the runtime is built
// and validated against, and where the extracted facts came from, so a
// substitute image behind the committed data is visible to whoever reads it.
// It does not resolve digests (the BOM pins them) or write files (sbomcmd).
//
// The document is a pure function of its inputs: no timestamp, a serial
// number derived from the content, components and dependencies sorted. Two
// runs over the same tree produce the same bytes, so the SBOM can be
// committed, diffed and reproduced like every other generated file.
package sbom

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	cdx "github.com/CycloneDX/cyclonedx-go"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/facts"
)

// Property names this package writes. They are namespaced "tcpxogen:" as the
// CycloneDX property taxonomy asks of unregistered names.
const (
	PropRole              = "tcpxogen:role"              // an image's role in bom.yaml (installer, daemon, ...); one per role
	PropReference         = "tcpxogen:reference"         // an image reference exactly as a manifest writes it; one per spelling
	PropInBOM             = "tcpxogen:inBillOfMaterials" // "false" for an image a manifest pulls that bom.yaml does not pin
	PropPinned            = "tcpxogen:pinnedByDigest"    // "false" for an image pulled by tag alone
	PropKind              = "tcpxogen:kind"              // Kubernetes kind of a shipped manifest
	PropAPIVersion        = "tcpxogen:apiVersion"        // Kubernetes apiVersion of a shipped manifest
	PropNamespace         = "tcpxogen:namespace"         // namespace of a namespaced manifest
	PropControllerImage   = "tcpxogen:controllerImage"   // the trainer controller deployed with the module
	PropControllerVersion = "tcpxogen:controllerVersion" // the JobSet controller deployed with the module
	PropVersionSource     = "tcpxogen:versionSource"     // why a version is what it is, when it is not self-evident
	PropPluginFile        = "tcpxogen:pluginFile"        // a file the extraction saw under the installer's /plugins

	// Provenance of the facts extracted from the installer image (plugin
	// version, NCCL version, plugin files, env profiles).
	PropProvenancePinned        = "tcpxogen:provenance:pinned"
	PropProvenanceSource        = "tcpxogen:provenance:source"
	PropProvenanceKind          = "tcpxogen:provenance:kind"
	PropProvenanceRead          = "tcpxogen:provenance:read"
	PropProvenanceDigest        = "tcpxogen:provenance:digest"
	PropProvenanceSubstituted   = "tcpxogen:provenance:substituted"
	PropProvenanceDefaultSHA256 = "tcpxogen:provenance:defaultProfileSHA256"
	PropProvenanceSimpleSHA256  = "tcpxogen:provenance:simpleProfileSHA256"
)

// bom-refs of the components that are not identified by a purl.
const (
	refTool        = "tool:tcpxogen"
	refNCCLPlugin  = "library:nccl-plugin-gpudirecttcpx"
	refNCCLCore    = "library:nccl"
	pluginName     = "nccl-plugin-gpudirecttcpx"
	ncclName       = "nccl"
	schemaURL      = "http://cyclonedx.org/schema/bom-1.6.schema.json"
	xmlNamespace16 = "http://cyclonedx.org/schema/bom/1.6"
)

// serialDomain separates this derivation from any other SHA-256 use. Change
// it if the derivation ever changes, so old and new serials cannot collide.
const serialDomain = "tcpxogen sbom serial v1\n"

// ErrStaleFacts means the generated facts were extracted for another
// installer than the one bom.yaml pins: the SBOM would attribute the plugin
// and NCCL versions of one image to another.
var ErrStaleFacts = errors.New("generated facts are stale")

// Manifest is one shipped Kubernetes object and the images its pod
// templates pull.
type Manifest struct {
	APIVersion string
	Kind       string
	Namespace  string // empty for cluster-scoped objects
	Name       string
	// Images are the references its containers, init containers and
	// ephemeral containers pull, as written; order and repeats do not matter.
	Images []string
}

// ref is the manifest's bom-ref: kind, namespace and name identify a
// Kubernetes object, so they identify the component.
func (m Manifest) ref() string {
	if m.Namespace == "" {
		return fmt.Sprintf("manifest:%s/%s", m.Kind, m.Name)
	}
	return fmt.Sprintf("manifest:%s/%s/%s", m.Kind, m.Namespace, m.Name)
}

// Inputs are everything the SBOM says. LoadInputs fills them from a tree;
// tests build them by hand.
type Inputs struct {
	// BOM gives each pinned image its role and pins Trainer and JobSet.
	BOM *bom.BOM
	// Runtime is the shipped artifact users reference (torch-distributed-tcpxo);
	// it becomes the document's subject, metadata.component.
	Runtime Manifest
	// Components are the cluster-side manifests shipped with it (the installer
	// and NRI injector DaemonSets); the runtime depends on them.
	Components []Manifest
	// Facts are the generated facts extracted from the installer image,
	// with their provenance.
	Facts *facts.Facts
}

// Build assembles the CycloneDX 1.6 document. It lists every image the
// manifests pull, whether or not bom.yaml pins it (a stray image is exactly
// what an SBOM reader must see), and fails only on input it cannot describe
// truthfully: a missing part, an unparseable image reference, or facts
// extracted for a different installer than the BOM pins.
func Build(in Inputs) (*cdx.BOM, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	roles, err := bomRoles(in.BOM)
	if err != nil {
		return nil, err
	}
	images, err := collectImages(in, roles)
	if err != nil {
		return nil, err
	}
	installer, err := parseImageRef(in.BOM.Images.Installer.Reference)
	if err != nil {
		return nil, fmt.Errorf("bom installer: %w", err)
	}

	deps := map[string][]string{}
	var comps []cdx.Component
	for _, img := range images {
		comps = append(comps, img.component())
		deps[img.ref.purl()] = nil
	}
	for _, m := range in.Components {
		comps = append(comps, manifestComponent(m))
		deps[m.ref()] = imageRefs(m.Images)
	}
	plugin, nccl := libraryComponents(in.Facts)
	comps = append(comps, plugin, nccl)
	deps[plugin.BOMRef], deps[nccl.BOMRef] = nil, nil
	// The libraries are the installer image's payload; if no manifest pulls
	// the installer they are still listed, just without a parent.
	if _, pulled := deps[installer.purl()]; pulled {
		deps[installer.purl()] = []string{plugin.BOMRef, nccl.BOMRef}
	}
	trainer, jobset := moduleComponents(in.BOM)
	comps = append(comps, trainer, jobset)
	// Trainer's go.mod requires the JobSet module: its API types embed JobSet's.
	deps[trainer.BOMRef], deps[jobset.BOMRef] = []string{jobset.BOMRef}, nil

	subject := manifestComponent(in.Runtime)
	subject.Description = "Kubeflow Trainer ClusterTrainingRuntime carrying the GPUDirect-TCPXO wiring"
	// The runtime's pods need the plugin the installer DaemonSet puts on the
	// node and the devices the NRI injector grants, so it depends on both,
	// besides the images it pulls and the trainer that runs it.
	runtimeDeps := append(imageRefs(in.Runtime.Images), trainer.BOMRef)
	for _, m := range in.Components {
		runtimeDeps = append(runtimeDeps, m.ref())
	}
	deps[subject.BOMRef] = runtimeDeps

	slices.SortFunc(comps, func(a, b cdx.Component) int { return cmp.Compare(a.BOMRef, b.BOMRef) })
	out := cdx.NewBOM()
	out.SpecVersion = cdx.SpecVersion1_6
	out.JSONSchema = schemaURL
	out.XMLNS = xmlNamespace16
	out.Version = 1
	out.Metadata = &cdx.Metadata{
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{
			Type: cdx.ComponentTypeApplication, BOMRef: refTool, Name: "tcpxogen",
			Description: "pins the GPUDirect-TCPXO NCCL plugin installer into Go constants and Kubernetes manifests",
		}}},
		Component:  &subject,
		Properties: provenanceProperties(in.Facts.Provenance),
	}
	out.Components = &comps
	out.Dependencies = dependencies(deps)
	if out.SerialNumber, err = serialNumber(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Encode writes b as pretty-printed CycloneDX 1.6 JSON ending in a newline.
// It refuses other spec versions instead of converting: the library's
// down-conversion copies through gob, which drops zero-valued pointers such
// as a false *bool, and the document says 1.6 on purpose. HTML escaping is
// off so a purl's '&' reads as '&', not \u0026; both decode the same.
func Encode(b *cdx.BOM) ([]byte, error) {
	if b == nil {
		return nil, errors.New("encode SBOM: no document")
	}
	if b.SpecVersion != cdx.SpecVersion1_6 {
		return nil, fmt.Errorf("encode SBOM: spec version %s, want %s", b.SpecVersion, cdx.SpecVersion1_6)
	}
	var buf bytes.Buffer
	if err := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).SetPretty(true).SetEscapeHTML(false).Encode(b); err != nil {
		return nil, fmt.Errorf("encode SBOM as CycloneDX JSON: %w", err)
	}
	return buf.Bytes(), nil // json.Encoder ends every value with '\n'
}

func (in Inputs) check() error {
	var errs []error
	if in.BOM == nil {
		errs = append(errs, errors.New("no bill of materials"))
	}
	if in.Facts == nil {
		errs = append(errs, errors.New("no generated facts"))
	}
	seen := map[string]bool{}
	for _, m := range append([]Manifest{in.Runtime}, in.Components...) {
		switch {
		case m.Kind == "" || m.Name == "":
			errs = append(errs, fmt.Errorf("a shipped manifest has no kind or name (kind %q, name %q)", m.Kind, m.Name))
		case seen[m.ref()]:
			// Two objects with one identity would share a bom-ref.
			errs = append(errs, fmt.Errorf("manifest %s is listed twice", m.ref()))
		}
		seen[m.ref()] = true
	}
	if in.Facts != nil {
		if in.Facts.PluginVersion == "" || in.Facts.NCCLVersion == "" {
			errs = append(errs, fmt.Errorf("generated facts lack the plugin version (%q) or the NCCL version (%q): run go generate ./...", in.Facts.PluginVersion, in.Facts.NCCLVersion))
		}
		if in.BOM != nil && in.Facts.Provenance.Pinned != in.BOM.Images.Installer.Reference {
			errs = append(errs, fmt.Errorf("%w: they were extracted for installer %q, but %s pins %q: run go generate ./...",
				ErrStaleFacts, in.Facts.Provenance.Pinned, cmp.Or(in.BOM.Path, bom.RepoPath), in.BOM.Images.Installer.Reference))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("build SBOM: %w", err)
	}
	return nil
}

// bomRoles maps each pinned image's purl to its role names. Keying on the
// purl, not the string, lets "pytorch/pytorch:x@d" in bom.yaml and
// "docker.io/pytorch/pytorch:x@d" in a manifest count as the same image.
func bomRoles(b *bom.BOM) (map[string][]string, error) {
	roles := map[string][]string{}
	for _, r := range b.ImageRoles() {
		ref, err := parseImageRef(r.Image.Reference)
		if err != nil {
			return nil, fmt.Errorf("bom image %s: %w", r.Name, err)
		}
		roles[ref.purl()] = append(roles[ref.purl()], r.Name)
	}
	return roles, nil
}

// image is one distinct image the manifests pull.
type image struct {
	ref      imageRef
	literals []string // every spelling the manifests use
	roles    []string
}

// collectImages deduplicates the pulled references by purl, so an image is
// listed once however many containers or manifests pull it.
func collectImages(in Inputs, roles map[string][]string) ([]*image, error) {
	byPURL := map[string]*image{}
	for _, m := range append([]Manifest{in.Runtime}, in.Components...) {
		for _, lit := range m.Images {
			ref, err := parseImageRef(lit)
			if err != nil {
				return nil, fmt.Errorf("build SBOM: %s %s: %w", m.Kind, m.Name, err)
			}
			img, ok := byPURL[ref.purl()]
			if !ok {
				img = &image{ref: ref, roles: roles[ref.purl()]}
				byPURL[ref.purl()] = img
			}
			if !slices.Contains(img.literals, lit) {
				img.literals = append(img.literals, lit)
			}
		}
	}
	out := slices.Collect(maps.Values(byPURL))
	slices.SortFunc(out, func(a, b *image) int { return cmp.Compare(a.ref.purl(), b.ref.purl()) })
	return out, nil
}

// imageRefs are the bom-refs of the images in refs, which Build has already
// parsed successfully.
func imageRefs(refs []string) []string {
	var out []string
	for _, r := range refs {
		if ref, err := parseImageRef(r); err == nil {
			out = append(out, ref.purl())
		}
	}
	return out
}

// roleDescriptions say what each BOM role is, for a reader of the SBOM who
// has not read bom.yaml.
var roleDescriptions = map[string]string{
	bom.RoleInstaller:   "NCCL plugin installer: puts the GPUDirect-TCPXO NCCL plugin and NCCL core on the node",
	bom.RoleDaemon:      "tcpxo-daemon (RxDM): the receive-datapath manager running beside each worker",
	bom.RoleNRIInjector: "NRI device injector: grants the daemon GPU devices without privilege",
	bom.RolePause:       "main container of the installer DaemonSet",
	bom.RoleWorker:      "default worker image of the shipped runtime (a TrainJob may override it)",
}

func (img *image) component() cdx.Component {
	r := img.ref
	c := cdx.Component{
		BOMRef:     r.purl(),
		Type:       cdx.ComponentTypeContainer,
		Name:       r.location(),
		Version:    r.tag,
		PackageURL: r.purl(),
	}
	if r.digest != "" {
		// The manifest digest is a SHA-256 over the image manifest: exactly
		// what a CycloneDX hash of the component records.
		c.Hashes = &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: r.digest[len("sha256:"):]}}
	}
	roles := slices.Sorted(slices.Values(img.roles))
	if len(roles) == 1 {
		c.Description = roleDescriptions[roles[0]]
	}
	var props []cdx.Property
	for _, role := range roles {
		props = append(props, cdx.Property{Name: PropRole, Value: role})
	}
	props = append(props,
		cdx.Property{Name: PropInBOM, Value: strconv.FormatBool(len(roles) > 0)},
		cdx.Property{Name: PropPinned, Value: strconv.FormatBool(r.digest != "")})
	for _, lit := range slices.Sorted(slices.Values(img.literals)) {
		props = append(props, cdx.Property{Name: PropReference, Value: lit})
	}
	c.Properties = &props
	return c
}

func manifestComponent(m Manifest) cdx.Component {
	props := []cdx.Property{{Name: PropKind, Value: m.Kind}}
	if m.APIVersion != "" {
		props = append(props, cdx.Property{Name: PropAPIVersion, Value: m.APIVersion})
	}
	if m.Namespace != "" {
		props = append(props, cdx.Property{Name: PropNamespace, Value: m.Namespace})
	}
	return cdx.Component{
		BOMRef:     m.ref(),
		Type:       cdx.ComponentTypeApplication,
		Name:       m.Name,
		Properties: &props,
	}
}

// libraryComponents are the installer image's payload. Their versions are
// extracted facts, so each carries where they were read from and whether
// that was a substitute: a reader looking at one component must not have to
// find the document-level provenance to learn the version is unverified.
func libraryComponents(f *facts.Facts) (plugin, nccl cdx.Component) {
	readFrom := []cdx.Property{
		{Name: PropProvenanceRead, Value: f.Provenance.Read},
		{Name: PropProvenanceSubstituted, Value: strconv.FormatBool(f.Provenance.Substituted)},
	}
	pluginProps := append([]cdx.Property{{Name: PropVersionSource, Value: facts.VersionOfRecord}}, readFrom...)
	for _, file := range slices.Sorted(slices.Values(f.PluginFiles)) {
		pluginProps = append(pluginProps, cdx.Property{Name: PropPluginFile, Value: file})
	}
	ncclProps := append([]cdx.Property{{Name: PropVersionSource, Value: "the libnccl.so.X.Y.Z the installer's NCCL library resolves to"}}, readFrom...)
	plugin = cdx.Component{
		BOMRef:      refNCCLPlugin,
		Type:        cdx.ComponentTypeLibrary,
		Supplier:    &cdx.OrganizationalEntity{Name: "Google"},
		Name:        pluginName,
		Version:     f.PluginVersion,
		Description: "GPUDirect-TCPXO NCCL net plugin (libnccl-net.so and its tuner), installed on the node by the installer image",
		Properties:  &pluginProps,
	}
	nccl = cdx.Component{
		BOMRef:      refNCCLCore,
		Type:        cdx.ComponentTypeLibrary,
		Supplier:    &cdx.OrganizationalEntity{Name: "NVIDIA"},
		Name:        ncclName,
		Version:     f.NCCLVersion,
		Description: "NVIDIA NCCL core library shipped in the installer image",
		Properties:  &ncclProps,
	}
	return plugin, nccl
}

// moduleComponents are Kubeflow Trainer and JobSet as the Go modules whose
// API types and CRDs the runtime is built and validated against.
func moduleComponents(b *bom.BOM) (trainer, jobset cdx.Component) {
	t, j := b.Trainer, b.JobSet
	trainer = cdx.Component{
		BOMRef:      golangPURL(t.Module, t.Version),
		Type:        cdx.ComponentTypeFramework,
		Name:        t.Module,
		Version:     t.Version,
		PackageURL:  golangPURL(t.Module, t.Version),
		Description: "Kubeflow Trainer: runs the ClusterTrainingRuntime; its CRDs validate every emitted manifest",
		Properties:  &[]cdx.Property{{Name: PropControllerImage, Value: t.ControllerImage}},
	}
	jobset = cdx.Component{
		BOMRef:      golangPURL(j.Module, j.ModuleVersion),
		Type:        cdx.ComponentTypeFramework,
		Name:        j.Module,
		Version:     j.ModuleVersion,
		PackageURL:  golangPURL(j.Module, j.ModuleVersion),
		Description: "JobSet: the workload API a TrainJob materialises into",
		Properties:  &[]cdx.Property{{Name: PropControllerVersion, Value: j.ControllerVersion}},
	}
	return trainer, jobset
}

func provenanceProperties(p facts.Provenance) *[]cdx.Property {
	return &[]cdx.Property{
		{Name: PropProvenancePinned, Value: p.Pinned},
		{Name: PropProvenanceSource, Value: p.Source},
		{Name: PropProvenanceKind, Value: p.Kind},
		{Name: PropProvenanceRead, Value: p.Read},
		{Name: PropProvenanceDigest, Value: p.Digest},
		{Name: PropProvenanceSubstituted, Value: strconv.FormatBool(p.Substituted)},
		{Name: PropProvenanceDefaultSHA256, Value: p.DefaultProfileSHA256},
		{Name: PropProvenanceSimpleSHA256, Value: p.SimpleProfileSHA256},
	}
}

// dependencies turns the graph into CycloneDX form, sorted by ref with each
// dependsOn sorted and deduplicated. Every component gets an entry, an empty
// one when it has no dependencies, because CycloneDX reads a missing entry as
// "unknown", not "none".
func dependencies(graph map[string][]string) *[]cdx.Dependency {
	var out []cdx.Dependency
	for _, ref := range slices.Sorted(maps.Keys(graph)) {
		d := cdx.Dependency{Ref: ref}
		if on := slices.Compact(slices.Sorted(slices.Values(graph[ref]))); len(on) > 0 {
			d.Dependencies = &on
		}
		out = append(out, d)
	}
	return &out
}

// serialNumber derives the serial from the document itself, so the same
// content always carries the same serial and different content a different
// one. It is an RFC 9562 version-8 UUID built the way RFC 9562 Appendix B.2
// builds a name-based one from SHA-256: the first 16 bytes of
// SHA-256(serialDomain || compact JSON of the document without its serial),
// with the version and variant bits set.
func serialNumber(b *cdx.BOM) (string, error) {
	saved := b.SerialNumber
	b.SerialNumber = ""
	data, err := json.Marshal(b)
	b.SerialNumber = saved
	if err != nil {
		return "", fmt.Errorf("derive SBOM serial number: %w", err)
	}
	sum := sha256.Sum256(append([]byte(serialDomain), data...))
	u := sum[:16]
	u[6] = u[6]&0x0f | 0x80 // version 8
	u[8] = u[8]&0x3f | 0x80 // variant 10 (RFC 9562)
	return fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16]), nil
}
