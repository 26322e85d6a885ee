// Package facts is the record of what extraction learned from the pinned
// images: the one type the extractor fills, the emitter writes, the
// generated package returns (tcpxo.Facts) and the builders and checks
// consume. Keeping it a plain value type lets emitters be tested without an
// image. It must never import generated/: the extractor links it.
package facts

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/guestconfig"
)

// EnvVar is one environment variable: of an NCCL env profile, in export
// order, or of the release table (bom/releases.yaml).
type EnvVar struct {
	Name  string `yaml:"name"`
	Value string `yaml:"value"`
}

// The installer's two NCCL env profiles, by the names the runtime's
// --profile flag takes.
const (
	ProfileDefault = "default"
	ProfileSimple  = "simple"
)

// Profiles are the profile names, in the order they are checked.
var Profiles = []string{ProfileDefault, ProfileSimple}

// Profile returns the variables the named profile exports, in order: for
// TCPXO the named installer profile, for a fabric whose env script
// branches on the machine the profile of that machine type.
func (f *Facts) Profile(name string) ([]EnvVar, bool) {
	if len(f.MachineProfiles) > 0 {
		for _, m := range f.MachineProfiles {
			if m.MachineType == name {
				return m.Env, true
			}
		}
		return nil, false
	}
	switch name {
	case ProfileDefault:
		return f.DefaultProfile, true
	case ProfileSimple:
		return f.SimpleProfile, true
	}
	return nil, false
}

// ProfileNames lists the names Profile takes, in order.
func (f *Facts) ProfileNames() []string {
	if len(f.MachineProfiles) == 0 {
		return Profiles
	}
	out := make([]string, len(f.MachineProfiles))
	for i, m := range f.MachineProfiles {
		out[i] = m.MachineType
	}
	return out
}

// GuestRules returns the guest config checker rules the named profile
// points the checker at (a machine profile's: the one checker config the
// fabric's env names).
func (f *Facts) GuestRules(name string) []guestconfig.Rule {
	if len(f.MachineProfiles) > 0 {
		if _, ok := f.Profile(name); ok {
			return f.DefaultGuestRules
		}
		return nil
	}
	switch name {
	case ProfileDefault:
		return f.DefaultGuestRules
	case ProfileSimple:
		return f.SimpleGuestRules
	}
	return nil
}

// MachineProfile is what a fabric's env script exports on one machine
// type, evaluated in the sandbox with that machine's declared answers.
type MachineProfile struct {
	MachineType string
	Env         []EnvVar
}

// Facts is everything tcpxogen pins about one installer version.
type Facts struct {
	// Fabric names the fabric these facts are of (internal/fabric): tcpxo
	// or gib. The fields a fabric has no use for stay empty.
	Fabric string

	// PluginVersion is the version of record: the pinned installer tag. The
	// plugin's own version is compiled in as integers and is not readable
	// from the image, so the tag is the only authoritative string.
	PluginVersion  string
	InstallerImage string
	DaemonImage    string
	DaemonVersion  string
	// NCCLVersion comes from the name libnccl.so resolves to (libnccl.so.X.Y.Z).
	NCCLVersion string
	LibDir      string

	DefaultProfile []EnvVar
	SimpleProfile  []EnvVar

	// DefaultGuestRules and SimpleGuestRules are the guest config checker's
	// rules for each profile, from the files the profiles point the checker
	// at, in file order. At NCCL init the plugin aborts or hangs a workload
	// that breaks an enforced rule.
	DefaultGuestRules []guestconfig.Rule
	SimpleGuestRules  []guestconfig.Rule

	// PluginFiles are the entries of /plugins seen in the layers read.
	// PluginFilesComplete says whether the scan proved the list complete
	// (it usually does not: proving it means reading the multi-GB base).
	PluginFiles         []string
	PluginFilesComplete bool

	// PluginLibraries are the shared objects under /plugins with the sonames
	// each one's ELF dynamic section needs (DT_NEEDED), read from the top
	// layers: what binds the worker image is what these libraries load.
	PluginLibraries []Library

	// Installer image facts the components and the benchmark depend on.
	// CUDAVersion is CUDA_VERSION from the installer image's config (its
	// nvidia/cuda base). It is a recorded fact, not the CUDA rule: v1.0.17
	// is built on CUDA 12.8 and qualified with 13.2, and its net plugin
	// needs no libcudart at all; PluginLibraries decide the worker's CUDA.
	CUDAVersion string
	// InstallerEntrypoint is the image config's entrypoint.
	InstallerEntrypoint []string
	// Scripts are the /scripts files the installer DaemonSet and the
	// benchmark rely on, each verified present.
	Scripts []string
	// SSHDPort is the port the image's sshd_config makes sshd listen on:
	// the image the fabric's NCCL tests run from (TCPXO's installer, gIB's
	// diagnostic image).
	SSHDPort int
	// AllReducePerfMPI is the MPI build of all_reduce_perf in that image,
	// verified present.
	AllReducePerfMPI string
	// AllGatherPerfMPI is the MPI build of all_gather_perf in that image,
	// verified present (gIB: Google's test runs all_gather).
	AllGatherPerfMPI string

	// Daemon image facts. DaemonEntrypoint is the daemon image config's
	// entrypoint; DaemonEntryScript the script it runs; DaemonEntryScriptMode
	// that script's permission bits as the image carries them.
	DaemonEntrypoint      []string
	DaemonEntryScript     string
	DaemonEntryScriptMode int

	// MachineProfiles are, for a fabric whose env script branches on the
	// machine (gIB's set_nccl_env.sh), the env per machine type, in the
	// fabric's machine type order. For gIB, DefaultGuestRules are the
	// rules of the one checker config the env names, and
	// Provenance.DefaultProfileSHA256 and DefaultGuestConfigSHA256 hash
	// the script and that config.
	MachineProfiles []MachineProfile
	// PayloadDir is where the installer image carries the payload it
	// installs on the host (gIB: lib64/, scripts/, configs/).
	PayloadDir string
	// ConfigFiles are the payload files the env names (checker and tuner
	// configs), each verified present in the image, as a pod sees them.
	ConfigFiles []string
	// DiagnosticImage is the image a fabric's NCCL tests run from, when it
	// is not the installer (gIB's nccl-plugin-gib-diagnostic), by digest.
	DiagnosticImage string
	// DiagnosticEntrypoint is that image config's entrypoint.
	DiagnosticEntrypoint []string

	// Refused lists external commands the profile sandbox refused, as
	// "profile: command (line N)", so the skipped NIC discovery is visible.
	Refused []string
	// Normalized names variables whose empty list elements were dropped.
	Normalized []string

	Provenance Provenance
	// DaemonProvenance says where the daemon image facts came from.
	DaemonProvenance ImageProvenance
	// DiagnosticProvenance says where the diagnostic image facts came from.
	DiagnosticProvenance ImageProvenance
}

// ImageProvenance says what was pinned and what was read for one image.
type ImageProvenance struct {
	Pinned      string
	Source      string // the source value that reproduces the read
	Kind        string
	Read        string
	Digest      string
	Substituted bool
}

// Provenance says where the facts came from.
type Provenance struct {
	Pinned string // the BOM's pinned installer reference
	// Source is the --source value that reproduces this extraction; a
	// generator run without --source reuses it.
	Source      string
	Kind        string // registry, oci-layout, testdata, registry-substitute
	Read        string // what was actually read
	Digest      string // manifest digest actually read
	Substituted bool   // true when Read is not the pinned image
	// DefaultProfileSHA256 and SimpleProfileSHA256 hash the script bytes.
	DefaultProfileSHA256 string
	SimpleProfileSHA256  string
	// DefaultGuestConfigSHA256 and SimpleGuestConfigSHA256 hash the guest
	// config checker files as read.
	DefaultGuestConfigSHA256 string
	SimpleGuestConfigSHA256  string
}

// Library is one shared object of the installer's /plugins: its file name
// and the sonames its dynamic section needs (DT_NEEDED), in the order the
// file lists them.
type Library struct {
	Name   string
	Needed []string
}

var cudartSoname = regexp.MustCompile(`^libcudart\.so\.([0-9]+)$`)

// CUDARuntimeMajor returns N when soname is libcudart.so.N, the CUDA
// runtime of major N, and ok false for any other soname.
func CUDARuntimeMajor(soname string) (int, bool) {
	m := cudartSoname.FindStringSubmatch(soname)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil && n > 0
}

// VersionOfRecord explains where PluginVersion comes from; emitted verbatim.
const VersionOfRecord = "the pinned installer image tag: the plugin compiles its version in as integers and the image carries no version string or label"

// CUDAMajor returns the major of a CUDA version such as "12.8.0" or "12.8":
// the NCCL plugin loads libcudart.so.<major> from the workload image, so the
// major is what the installer and the worker must share.
func CUDAMajor(version string) (int, error) {
	major, _, _ := strings.Cut(version, ".")
	n, err := strconv.Atoi(major)
	if err != nil || n <= 0 || n > 99 {
		return 0, fmt.Errorf("CUDA version %q does not start with a major version number", version)
	}
	return n, nil
}
