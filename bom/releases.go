package bom

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/yamlstrict"
)

// Releases is Google's published GPUDirect-TCPXO release data.
type Releases struct {
	// Pairs are the installer↔daemon versions Google released together. Only
	// pairs in the release notes belong here: the pairing is what makes a
	// daemon safe to run next to an installer.
	Pairs []Pair `yaml:"pairs"`
	// NCCLConfigs are the NCCL environment lists the release notes publish,
	// per installer version.
	NCCLConfigs []NCCLConfig `yaml:"ncclConfigs"`
	// RetiredDaemonFlags are the tcpxo-daemon flags a daemon release retired
	// or rejects, each with the release it applies from and its source.
	RetiredDaemonFlags []RetiredDaemonFlag `yaml:"retiredDaemonFlags"`

	// GIBReleases are Google's NCCL/gIB releases (x86 64-bit) and
	// GIBMachineTypes the GKE floor of each gIB machine type (bom/gib.go).
	GIBReleases     []GIBRelease     `yaml:"gibReleases"`
	GIBMachineTypes []GIBMachineType `yaml:"gibMachineTypes"`

	// Path is the file the data was loaded from (the name given to ParseReleases).
	Path string `yaml:"-"`

	lines *yamlstrict.Locator
}

// Pair is one published release: an installer tag, the daemon tag released
// with it, and the NCCL version Google qualified it with.
type Pair struct {
	Date      string `yaml:"date"` // YYYY-MM-DD of the release note
	Installer string `yaml:"installer"`
	Daemon    string `yaml:"daemon"`
	// NCCL is free text as published ("2.28.7-1", "2.21.5–2.23.4"); empty when
	// the notes give none.
	NCCL string `yaml:"nccl,omitempty"`
	// Source is where the pair is published: SourceReleaseNotes, or
	// SourceManifests for a pair known from Google's manifests and the
	// plugin's source tags but not (yet) from the release notes. Both are
	// kept; only a release-notes pair may be pinned.
	Source string `yaml:"source"`
	// CUDA and Driver are the CUDA toolkit and GPU driver the pair is
	// qualified with, as published ("12.8", "580.95.05"); empty when unknown.
	CUDA   string `yaml:"cuda,omitempty"`
	Driver string `yaml:"driver,omitempty"`
	// DriverBranch is the GKE node flag's value the notes name
	// (gpu-driver-version=R580); it must be the branch of Driver.
	DriverBranch string `yaml:"driverBranch,omitempty"`
	// GKE is the minimum GKE version the notes name ("1.33.5-gke.1125000").
	GKE string `yaml:"gke,omitempty"`
	// PrecompiledLibs is the tag of the precompiled-libs image (tuner, shim,
	// guest configs) the release was built with.
	PrecompiledLibs string `yaml:"precompiledLibs,omitempty"`
	// GLibc is the minimum glibc a workload image needs ("2.35").
	GLibc string `yaml:"glibc,omitempty"`
}

// Where a pair is published.
const (
	SourceReleaseNotes = "release-notes"
	SourceManifests    = "manifests"
)

// NCCLConfig is the environment published for one installer version.
type NCCLConfig struct {
	Installer string `yaml:"installer"`
	// Source says where Env was transcribed from, and whether that was first-hand.
	Source string `yaml:"source"`
	// LibDir is the directory the published list names for the installed
	// plugin (the notes ask readers to replace it with their own); empty when
	// the list is taken as it stands.
	LibDir string         `yaml:"libDir"`
	Env    []facts.EnvVar `yaml:"env"`
}

// EnvIn returns the published list as a workload whose plugin directory is
// libDir sees it: every occurrence of the list's LibDir in a value is
// replaced. The copy is the caller's.
func (c NCCLConfig) EnvIn(libDir string) []facts.EnvVar {
	out := slices.Clone(c.Env)
	if c.LibDir == "" || c.LibDir == libDir {
		return out
	}
	for i := range out {
		out[i].Value = strings.ReplaceAll(out[i].Value, c.LibDir, libDir)
	}
	return out
}

// PairFor returns the published pair whose installer tag is exactly
// installerVersion: "v1.0.21-rc1" does not match "v1.0.21".
func (r *Releases) PairFor(installerVersion string) (Pair, bool) {
	i := slices.IndexFunc(r.Pairs, func(p Pair) bool { return p.Installer == installerVersion })
	if i < 0 {
		return Pair{}, false
	}
	return r.Pairs[i], true
}

// ConfigFor returns the published NCCL config of installerVersion (exact
// match). Env is a copy, so callers may modify it.
func (r *Releases) ConfigFor(installerVersion string) (NCCLConfig, bool) {
	i := slices.IndexFunc(r.NCCLConfigs, func(c NCCLConfig) bool { return c.Installer == installerVersion })
	if i < 0 {
		return NCCLConfig{}, false
	}
	cfg := r.NCCLConfigs[i]
	cfg.Env = slices.Clone(cfg.Env)
	return cfg, true
}

// PublishedInstallers lists the installer tags of all pairs, newest first.
func (r *Releases) PublishedInstallers() []string {
	pairs := slices.Clone(r.Pairs)
	// Dates are validated YYYY-MM-DD, so string order is date order.
	slices.SortStableFunc(pairs, func(a, b Pair) int { return cmp.Compare(b.Date, a.Date) })
	names := make([]string, len(pairs))
	for i, p := range pairs {
		names[i] = p.Installer
	}
	return names
}

// NewerPairs lists the release-notes pairs published after installer's,
// newest first: what a bump from installer could pin.
func (r *Releases) NewerPairs(installer string) []Pair {
	cur, ok := r.PairFor(installer)
	if !ok {
		return nil
	}
	var out []Pair
	for _, inst := range r.confirmedInstallers() {
		if p, _ := r.PairFor(inst); p.Date > cur.Date {
			out = append(out, p)
		}
	}
	return out
}

// RollBack reports whether moving the pin from installer from to installer
// to goes back to a pair published earlier, by the release notes' dates
// (tags do not order: v1.0.9-1 follows v1.0.8-1). was and now are the two
// pairs; back is false when either is not in the table, or there is none.
func (r *Releases) RollBack(from, to string) (was, now Pair, back bool) {
	if r == nil {
		return was, now, false
	}
	was, okFrom := r.PairFor(from)
	now, okTo := r.PairFor(to)
	return was, now, okFrom && okTo && now.Date < was.Date
}

// confirmedInstallers lists the installers of release-notes pairs, newest first.
func (r *Releases) confirmedInstallers() []string {
	return slices.DeleteFunc(r.PublishedInstallers(), func(inst string) bool {
		p, _ := r.PairFor(inst)
		return p.Source != SourceReleaseNotes
	})
}

// LoadReleases reads and validates a releases.yaml.
func LoadReleases(path string) (*Releases, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the release table: %w (pass the path to %s, or run from the module root)", err, ReleasesRepoPath)
	}
	return ParseReleases(path, data)
}

// ParseReleases validates releases.yaml content; name is used in error messages.
func ParseReleases(name string, data []byte) (*Releases, error) {
	var r Releases
	loc, err := decodeStrict(name, data, &r)
	if err != nil {
		return nil, err
	}
	c := &checker{file: name, lines: loc}
	r.validate(c)
	if err := c.err(); err != nil {
		return nil, err
	}
	r.Path, r.lines = name, loc
	return &r, nil
}

// LoadAll loads both files and checks them against each other (see
// CheckPublished). Problems in both files are reported together.
func LoadAll(bomPath, releasesPath string) (*BOM, *Releases, error) {
	b, berr := Load(bomPath)
	r, rerr := LoadReleases(releasesPath)
	if err := errors.Join(berr, rerr); err != nil {
		return nil, nil, err
	}
	if err := CheckPublished(b, r); err != nil {
		return nil, nil, err
	}
	return b, r, nil
}

// CheckPublished rejects a BOM whose installer is not a published release or
// whose daemon is not the one published with it. The two are coupled: a
// mismatched daemon starts, and NCCL then fails or falls back at run time.
func CheckPublished(b *BOM, r *Releases) error {
	c := &checker{file: b.Path, lines: b.lines}
	installer, daemon := b.Images.Installer.Version, b.Images.Daemon.Version
	pair, ok := r.PairFor(installer)
	if !ok {
		c.add(path("images").key(RoleInstaller).key("version"), fmt.Sprintf("%s is not a published installer in %s", quote(installer), r.Path),
			fmt.Sprintf("add the published pair to %s or pick a published version: %s", r.Path, strings.Join(r.PublishedInstallers(), ", ")), nil)
		return c.err()
	}
	if pair.Source != SourceReleaseNotes {
		c.add(path("images").key(RoleInstaller).key("version"),
			fmt.Sprintf("installer %s is published only in Google's manifests and source tags (%s), not confirmed by the release notes", installer, r.Path),
			fmt.Sprintf("pin a release-notes pair (%s), or set the pair's source to %s once the notes confirm it", strings.Join(r.confirmedInstallers(), ", "), SourceReleaseNotes), nil)
	}
	if pair.Daemon != daemon {
		where := r.Path
		if i := slices.Index(r.Pairs, pair); i >= 0 {
			if line, ok := r.lines.Line(string(path("pairs").index(i))); ok {
				where = fmt.Sprintf("%s:%d", r.Path, line)
			}
		}
		fix := fmt.Sprintf("pin the daemon to %s, or pick the installer published with %s", pair.Daemon, daemon)
		if j := slices.IndexFunc(r.Pairs, func(p Pair) bool { return p.Daemon == daemon }); j >= 0 {
			fix = fmt.Sprintf("pin the daemon to %s, or pin installer %s, which was published with %s", pair.Daemon, r.Pairs[j].Installer, daemon)
		}
		c.add(path("images").key(RoleDaemon).key("version"),
			fmt.Sprintf("%s is not the daemon published with installer %s (%s pairs it with %s)", quote(daemon), installer, where, pair.Daemon), fix, nil)
	}
	checkGIBPublished(c, b, r)
	return c.err()
}

var (
	// The GKE node flag's driver branch (R580) and a GKE version
	// (1.33.5-gke.1125000).
	branchRE = regexp.MustCompile(`^R[0-9]{3}$`)
	gkeRE    = regexp.MustCompile(`^1\.[0-9]+\.[0-9]+-gke\.[0-9]+$`)
	// Docker's tag grammar; release tags are irregular (v1.0.13_1, v1.0.09),
	// so nothing stricter can be assumed.
	tagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	// Names a shell can export; NCCL reads its settings through the environment.
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

const dateLayout = "2006-01-02"

func (r *Releases) validate(c *checker) {
	installers := map[string]int{} // installer tag → index of its pair
	if c.section(path("pairs"), "list Google's published installer/daemon pairs under pairs:") {
		for i, p := range r.Pairs {
			pp := path("pairs").index(i)
			if c.require(pp.key("date"), p.Date, "set it to the release note's date, YYYY-MM-DD") {
				if _, err := time.Parse(dateLayout, p.Date); err != nil {
					c.add(pp.key("date"), fmt.Sprintf("%s is not a date", quote(p.Date)), "write it as YYYY-MM-DD, e.g. 2026-01-09", err)
				}
			}
			if c.require(pp.key("source"), p.Source, "say where the pair is published: "+SourceReleaseNotes+" or "+SourceManifests) &&
				p.Source != SourceReleaseNotes && p.Source != SourceManifests {
				c.add(pp.key("source"), fmt.Sprintf("%s is not %s or %s", quote(p.Source), SourceReleaseNotes, SourceManifests),
					"use release-notes for a pair in the GKE release notes, manifests for one known only from Google's manifests or source tags", nil)
			}
			if p.DriverBranch != "" {
				major, _, _ := strings.Cut(p.Driver, ".")
				switch {
				case !branchRE.MatchString(p.DriverBranch):
					c.add(pp.key("driverBranch"), fmt.Sprintf("%s is not a driver branch", quote(p.DriverBranch)), "write the gpu-driver-version flag's value as published, e.g. R580", nil)
				case p.Driver == "":
					c.absent(pp.key("driver"), "set the driver version the notes qualify, e.g. 580.65.06: a branch without it cannot be checked")
				case "R"+major != p.DriverBranch:
					c.add(pp.key("driverBranch"), fmt.Sprintf("%s is not the branch of driver %s", p.DriverBranch, p.Driver), "set it to R"+major+", or correct the driver", nil)
				}
			}
			if p.GKE != "" && !gkeRE.MatchString(p.GKE) {
				c.add(pp.key("gke"), fmt.Sprintf("%s is not a GKE version", quote(p.GKE)), "write the minimum GKE version as published, e.g. 1.33.5-gke.1125000", nil)
			}
			if p.PrecompiledLibs != "" {
				c.tag(pp.key("precompiledLibs"), p.PrecompiledLibs, "the precompiled-libs image tag the notes name")
			}
			c.tag(pp.key("installer"), p.Installer, "the installer (nccl-plugin-gpudirecttcpx-dev) tag")
			c.tag(pp.key("daemon"), p.Daemon, "the daemon (tcpgpudmarxd-dev) tag published with it")
			if p.Installer == "" {
				continue
			}
			if first, dup := installers[p.Installer]; dup {
				line, _ := c.lines.Line(string(path("pairs").index(first)))
				c.add(pp.key("installer"), fmt.Sprintf("%s is already listed at line %d", quote(p.Installer), line),
					"keep one row per installer release; an installer is published with exactly one daemon", nil)
				continue
			}
			installers[p.Installer] = i
		}
	}

	configs := map[string]int{}
	for i, cfg := range r.NCCLConfigs {
		cp := path("ncclConfigs").index(i)
		if c.tag(cp.key("installer"), cfg.Installer, "the installer version this list was published for") {
			if _, ok := installers[cfg.Installer]; !ok {
				c.add(cp.key("installer"), fmt.Sprintf("%s is not an installer listed under pairs", quote(cfg.Installer)),
					fmt.Sprintf("add its published pair first, or correct the tag (listed: %s)", strings.Join(r.PublishedInstallers(), ", ")), nil)
			} else if first, dup := configs[cfg.Installer]; dup {
				line, _ := c.lines.Line(string(path("ncclConfigs").index(first)))
				c.add(cp.key("installer"), fmt.Sprintf("%s already has an NCCL config at line %d", quote(cfg.Installer), line),
					"keep one list per installer version", nil)
			} else {
				configs[cfg.Installer] = i
			}
		}
		c.require(cp.key("source"), cfg.Source, `say where the list comes from, e.g. "GPUDirect-TCPXO release notes, v1.0.15"`)
		if cfg.LibDir != "" && !strings.HasPrefix(cfg.LibDir, "/") {
			c.add(cp.key("libDir"), fmt.Sprintf("%s is not an absolute directory", quote(cfg.LibDir)), "copy the directory from the list's values, e.g. /usr/local/tcpxo/lib64", nil)
		}
		if !c.section(cp.key("env"), "list the published variables as - {name: NAME, value: \"VALUE\"}") {
			continue
		}
		names := map[string]int{}
		for j, env := range cfg.Env {
			ep := cp.key("env").index(j)
			if c.require(ep.key("name"), env.Name, "set the variable's name") {
				switch first, dup := names[env.Name]; {
				case !envNameRE.MatchString(env.Name):
					c.add(ep.key("name"), fmt.Sprintf("%s is not a valid environment variable name", quote(env.Name)),
						"use letters, digits and '_', not starting with a digit", nil)
				case dup:
					line, _ := c.lines.Line(string(cp.key("env").index(first)))
					c.add(ep.key("name"), fmt.Sprintf("%s is already set at line %d", quote(env.Name), line),
						"keep one entry per variable; a pod spec with both keeps only the last", nil)
				default:
					names[env.Name] = j
				}
			}
			// An empty value is never a published NCCL setting; it is almost
			// always a value lost to a YAML typo.
			c.require(ep.key("value"), env.Value, fmt.Sprintf("set the value published for %s, quoted", env.Name))
		}
	}

	r.validateRetiredDaemonFlags(c)
	r.validateGIB(c)
}

// tag requires v to be a well-formed image tag.
func (c *checker) tag(p path, v, what string) bool {
	if !c.require(p, v, "set it to "+what) {
		return false
	}
	if !tagRE.MatchString(v) {
		c.add(p, fmt.Sprintf("%s is not an image tag", quote(v)), "write the tag exactly as published, e.g. v1.0.15 or v1.0.13_1", nil)
		return false
	}
	return true
}
