// Package bom loads tcpxogen's bill of materials (bom.yaml: every image and
// component version that ships, pinned by digest) and Google's published
// GPUDirect-TCPXO release data (releases.yaml: installer↔daemon pairs and the
// NCCL environment published for each installer).
//
// Everything the project generates or checks starts from these two files, so
// the loader is strict: unknown or duplicate keys, unpinned images, and a
// version that disagrees with its tag are all rejected, each with the file,
// line and fix, instead of being carried silently into a manifest.
package bom

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
)

// Repo-relative locations of the data files, in slash form.
const (
	RepoPath         = "bom/bom.yaml"
	ReleasesRepoPath = "bom/releases.yaml"
)

// DefaultPath is bom.yaml relative to the module root, which is where the
// Makefile and the go:generate directives run the tools from.
func DefaultPath() string { return filepath.FromSlash(RepoPath) }

// DefaultReleasesPath is releases.yaml relative to the module root.
func DefaultReleasesPath() string { return filepath.FromSlash(ReleasesRepoPath) }

// BOM is the bill of materials: what tcpxogen ships.
type BOM struct {
	Images  Images  `yaml:"images"`
	Trainer Trainer `yaml:"trainer"`
	JobSet  JobSet  `yaml:"jobset"`

	// Path is the file the BOM was loaded from (the name given to Parse).
	Path string `yaml:"-"`

	lines *yamlstrict.Locator
}

// Images are the container images that ship, by role.
type Images struct {
	Installer   Image `yaml:"installer"`   // NCCL plugin installer (nccl-plugin-gpudirecttcpx-dev)
	Daemon      Image `yaml:"daemon"`      // tcpxo-daemon / RxDM (tcpgpudmarxd-dev), coupled to Installer
	NRIInjector Image `yaml:"nriInjector"` // NRI device injector DaemonSet
	Pause       Image `yaml:"pause"`       // main container of the installer DaemonSet
	Worker      Image `yaml:"worker"`      // default torch worker image of the shipped runtime

	// The gIB fabric (GPUDirect-RDMA on A3 Ultra and A4): its installer
	// (nccl-plugin-gib) and the diagnostic image its NCCL tests run from
	// (nccl-plugin-gib-diagnostic), both of one gIB release.
	GIBInstaller  Image `yaml:"gibInstaller"`
	GIBDiagnostic Image `yaml:"gibDiagnostic"`
}

// Trainer pins Kubeflow Trainer: the Go module whose API types and CRDs the
// runtime is built and validated against, and the controller that runs it.
type Trainer struct {
	Module  string `yaml:"module"`
	Version string `yaml:"version"`
	// ControllerImage is repo:tag, optionally @sha256:…; its tag must equal
	// Version so the controller and the CRDs come from the same release.
	ControllerImage string `yaml:"controllerImage"`
}

// JobSet pins JobSet. The module and controller versions differ on purpose:
// the module version is the one the trainer module requires, the controller
// version is the release deployed next to the trainer.
type JobSet struct {
	Module            string `yaml:"module"`
	ModuleVersion     string `yaml:"moduleVersion"`
	ControllerVersion string `yaml:"controllerVersion"`
}

// Role names of the images, as written under images: in bom.yaml.
const (
	RoleInstaller   = "installer"
	RoleDaemon      = "daemon"
	RoleNRIInjector = "nriInjector"
	RolePause       = "pause"
	RoleWorker      = "worker"

	RoleGIBInstaller  = "gibInstaller"
	RoleGIBDiagnostic = "gibDiagnostic"
)

// Role is one image of the BOM with its role name.
type Role struct {
	Name  string
	Image Image
}

// imageRoles is the single list of image roles; validation, ImageRoles and
// any later iteration all follow it, so adding a role is one line here.
var imageRoles = []struct {
	name  string
	image func(*Images) *Image
}{
	{RoleInstaller, func(i *Images) *Image { return &i.Installer }},
	{RoleDaemon, func(i *Images) *Image { return &i.Daemon }},
	{RoleNRIInjector, func(i *Images) *Image { return &i.NRIInjector }},
	{RolePause, func(i *Images) *Image { return &i.Pause }},
	{RoleWorker, func(i *Images) *Image { return &i.Worker }},
	{RoleGIBInstaller, func(i *Images) *Image { return &i.GIBInstaller }},
	{RoleGIBDiagnostic, func(i *Images) *Image { return &i.GIBDiagnostic }},
}

// ImageRoles lists the images in a fixed order (installer, daemon,
// nriInjector, pause, worker, gibInstaller, gibDiagnostic). The slice is a copy.
func (b *BOM) ImageRoles() []Role {
	roles := make([]Role, 0, len(imageRoles))
	for _, r := range imageRoles {
		roles = append(roles, Role{Name: r.name, Image: *r.image(&b.Images)})
	}
	return roles
}

// Load reads and validates a bom.yaml.
func Load(path string) (*BOM, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the bill of materials: %w (pass the path to %s, or run from the module root)", err, RepoPath)
	}
	return Parse(path, data)
}

// Parse validates bom.yaml content; name is used in error messages.
func Parse(name string, data []byte) (*BOM, error) {
	var b BOM
	loc, err := decodeStrict(name, data, &b)
	if err != nil {
		return nil, err
	}
	c := &checker{file: name, lines: loc}
	b.validate(c)
	if err := c.err(); err != nil {
		return nil, err
	}
	b.Path, b.lines = name, loc
	return &b, nil
}

func (b *BOM) validate(c *checker) {
	if c.section(path("images"), "add images: with the keys "+strings.Join(roleNames(), ", ")) {
		for _, r := range imageRoles {
			p := path("images").key(r.name)
			if !c.section(p, fmt.Sprintf("add %s: {reference: repo:tag@sha256:<64 hex>, version: tag}", r.name)) {
				continue
			}
			img := r.image(&b.Images)
			c.addProblems(p, img.parse())
			switch {
			case r.name == RoleWorker && img.CUDAMajor <= 0:
				c.add(p.key("cudaMajor"), "the worker image declares no CUDA major",
					"set cudaMajor: to the CUDA major of the worker image (12 for a cuda12.x build): it must equal the installer's, whose plugin loads libcudart from the worker", nil)
			case r.name != RoleWorker && img.CUDAMajor != 0:
				c.add(p.key("cudaMajor"), "only the worker image declares a CUDA major", "remove cudaMajor: the installer's comes from its image config", nil)
			}
		}
	}

	if p := (path("trainer")); c.section(p, "add trainer: with module, version and controllerImage") {
		t := b.Trainer
		c.module(p, "module", t.Module, "version", t.Version)
		if c.require(p.key("controllerImage"), t.ControllerImage, "set it to the trainer controller image, repo:tag[@sha256:<64 hex>]") {
			ref, probs := parsePinned(t.ControllerImage, false)
			for k := range probs {
				probs[k].field = "controllerImage"
			}
			c.addProblems(p, probs)
			if len(probs) == 0 && t.Version != "" && ref.tag != t.Version {
				c.add(p.key("controllerImage"), fmt.Sprintf("tag %s does not match trainer.version %s", quote(ref.tag), quote(t.Version)),
					"pin the controller of the same release as the module: the CRDs the runtime is validated against come from the module", nil)
			}
		}
	}

	if p := (path("jobset")); c.section(p, "add jobset: with module, moduleVersion and controllerVersion") {
		j := b.JobSet
		c.module(p, "module", j.Module, "moduleVersion", j.ModuleVersion)
		if c.require(p.key("controllerVersion"), j.ControllerVersion, "set it to the JobSet release deployed with the trainer, e.g. v0.11.0") {
			c.semver(p.key("controllerVersion"), j.ControllerVersion)
		}
	}
}

func roleNames() []string {
	names := make([]string, len(imageRoles))
	for i, r := range imageRoles {
		names[i] = r.name
	}
	return names
}

var (
	// Canonical semver with the v prefix, as Go module versions require.
	semverRE = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)
	// A Go module path: a domain-like first element, then path elements.
	modulePathRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*(\.[a-z0-9-]+)+(/[A-Za-z0-9._~+-]+)*$`)
	majorSuffix  = regexp.MustCompile(`/v(\d+)$`)
)

func (c *checker) semver(p path, v string) bool {
	if semverRE.MatchString(v) {
		return true
	}
	c.add(p, fmt.Sprintf("%s is not a Go module version", quote(v)), "write it as vMAJOR.MINOR.PATCH, e.g. v2.2.0", nil)
	return false
}

// module checks a Go module path and version under p, including Go's rule
// that major versions from 2 on are part of the module path, which a version
// bump without a path change would otherwise break only at build time.
func (c *checker) module(p path, pathKey, modPath, versionKey, version string) {
	pathOK := c.require(p.key(pathKey), modPath, "set it to the Go module path, e.g. sigs.k8s.io/jobset")
	if pathOK && !modulePathRE.MatchString(modPath) {
		c.add(p.key(pathKey), fmt.Sprintf("%s is not a Go module path", quote(modPath)), "write it as in go.mod, e.g. github.com/kubeflow/trainer/v2", nil)
		pathOK = false
	}
	if !c.require(p.key(versionKey), version, "set it to the module version, e.g. v2.2.0") || !c.semver(p.key(versionKey), version) || !pathOK {
		return
	}
	if strings.HasPrefix(modPath, "gopkg.in/") || strings.HasSuffix(version, "+incompatible") {
		return // gopkg.in encodes the major version its own way; +incompatible has no suffix
	}
	major, _ := strconv.Atoi(strings.TrimPrefix(strings.SplitN(version, ".", 2)[0], "v"))
	suffix := 0
	if m := majorSuffix.FindStringSubmatch(modPath); m != nil {
		suffix, _ = strconv.Atoi(m[1])
	}
	if (major >= 2 || suffix != 0) && suffix != major {
		want := strings.TrimSuffix(modPath, majorSuffix.FindString(modPath))
		if major >= 2 {
			want += "/v" + strconv.Itoa(major)
		}
		c.add(p.key(pathKey), fmt.Sprintf("%s does not match major version %s of %s", quote(modPath), strings.SplitN(version, ".", 2)[0], p.key(versionKey)),
			fmt.Sprintf("Go puts major versions 2 and up in the module path: use %q, or correct the version", want), nil)
	}
}

// readFile reads a data file through the one input helper: a regular file
// of at most maxFileSize bytes that no symlink leads out of its directory,
// so a wrong path is refused before it is parsed and a data file linked to a
// secret is never read, and so never quoted back key by key.
func readFile(path string) ([]byte, error) {
	return inputfile.Read(path, inputfile.Spec{Max: maxFileSize, Within: filepath.Dir(path)})
}
