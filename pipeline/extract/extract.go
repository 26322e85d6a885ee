// Package extract turns the pinned installer and daemon images into one
// facts.Facts: it opens each image from the declared source, reads only the
// files it needs top-down, evaluates the env profiles in a sandbox and checks
// that what the profiles point at exists in the image. It does not fetch or
// verify blobs (imagesource), scan layers (imagefs) or write Go (emit).
package extract

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/imagefs"
	"github.com/tcpxogen/tcpxogen/internal/imagesource"
	"github.com/tcpxogen/tcpxogen/internal/profile"
	"github.com/tcpxogen/tcpxogen/internal/reconstruction"
)

// Paths inside the installer image (v1.0.15 layout, see testdata/installer/v1.0.15/README.md).
const (
	DefaultProfilePath = "/scripts/nccl-env-profile.sh"
	SimpleProfilePath  = "/scripts/nccl-env-profile-simple.sh"
	EntryScriptPath    = "/scripts/container_entry.sh"
	NCCLLibPath        = "/third_party/nccl-netsupport/build/lib/libnccl.so"
	PluginDir          = "/plugins"

	// DefaultLibDir is NCCL_LIB_DIR inside a workload pod: the host's
	// /home/kubernetes/bin/nvidia is mounted at /usr/local/nvidia.
	DefaultLibDir = "/usr/local/nvidia/lib64"

	// TestdataDir holds one reconstruction source tree per installer version.
	TestdataDir = "testdata/installer"
)

// Config is one extraction.
type Config struct {
	Root   string // repository root; testdata and relative paths resolve here
	BOM    *bom.BOM
	Source SourceSpec
	// DaemonSource is where the tcpxo-daemon image is read; its kinds are
	// those of Source, and a substitute or layout stands for the BOM's daemon.
	DaemonSource SourceSpec
	// GIBSource is where the gIB installer is read (RunGIB); its kinds are
	// those of Source. Default: testdata when Source is, else the registry.
	GIBSource SourceSpec
	// GIBDiagnosticSource is where the gIB diagnostic image is read
	// (RunGIB); its kinds are those of Source. Default: the source the
	// committed gIB facts record for it, else DefaultDaemonSource(GIBSource).
	GIBDiagnosticSource SourceSpec
	CacheDir            string // "" disables the local cache
	LibDir              string // NCCL_LIB_DIR for profile evaluation; default DefaultLibDir
	Limits              imagefs.Limits
	// MaxLibraryBytes bounds one plugin library read for its dynamic
	// section; 0 means MaxPluginLibraryBytes.
	MaxLibraryBytes int64
	Progress        io.Writer // nil: quiet

	Transport http.RoundTripper  // nil: default transport
	Stats     *imagesource.Stats // optional network counters
}

// Result is the extracted facts plus what the scan cost.
type Result struct {
	Facts *facts.Facts
	Scan  imagefs.Stats
}

// Run extracts facts for cfg.BOM's installer from cfg.Source.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.LibDir == "" {
		cfg.LibDir = DefaultLibDir
	}
	if cfg.DaemonSource.Kind == "" {
		cfg.DaemonSource = DefaultDaemonSource(cfg.Source)
	}
	src, err := openSource(cfg)
	if err != nil {
		return nil, err
	}
	return run(ctx, cfg, src)
}

func run(ctx context.Context, cfg Config, src imagesource.Source) (*Result, error) {
	img, err := src.Image(ctx)
	if err != nil {
		return nil, fmt.Errorf("open installer image: %w", err)
	}
	scan, err := scanImage(ctx, cfg, img)
	if err != nil {
		return nil, err
	}
	f, err := assemble(ctx, cfg, scan)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read installer image config: %w", err)
	}
	if err := installerFacts(cf, scan, f); err != nil {
		return nil, fmt.Errorf("installer %s: %w", cfg.BOM.Images.Installer.Version, err)
	}
	if err := checkReferencedFiles(ctx, cfg, img, f, scan); err != nil {
		return nil, err
	}
	if f.PluginLibraries, err = pluginLibraries(ctx, cfg, img, f.PluginFiles); err != nil {
		return nil, fmt.Errorf("installer %s: %w", cfg.BOM.Images.Installer.Version, err)
	}
	dsrc, err := openImage(cfg, cfg.DaemonSource, cfg.BOM.Images.Daemon.Reference, DaemonTestdataDir, cfg.BOM.Images.Daemon.Version)
	if err != nil {
		return nil, err
	}
	if err := daemonFacts(ctx, cfg, dsrc, f); err != nil {
		return nil, err
	}
	f.DaemonProvenance.Source = cfg.DaemonSource.Raw
	if cfg.DaemonSource.Kind == SourceOCILayout {
		f.DaemonProvenance.Read = cfg.DaemonSource.Arg + "@" + f.DaemonProvenance.Digest
	}
	p := src.Describe()
	f.Provenance.Pinned = cfg.BOM.Images.Installer.Reference
	f.Provenance.Source = cfg.Source.Raw
	f.Provenance.Kind, f.Provenance.Read, f.Provenance.Digest, f.Provenance.Substituted = p.Kind, p.Read, p.Digest, p.Substituted
	if cfg.Source.Kind == SourceOCILayout {
		// Record the directory as the user named it, not this machine's
		// absolute path, so the generated file is the same everywhere.
		f.Provenance.Read = cfg.Source.Arg + "@" + p.Digest
	}
	return &Result{Facts: f, Scan: scan.Stats}, nil
}

func openSource(cfg Config) (imagesource.Source, error) {
	return openImage(cfg, cfg.Source, cfg.BOM.Images.Installer.Reference, TestdataDir, cfg.BOM.Images.Installer.Version)
}

// openImage opens the image pinned as pinned from spec; a testdata spec
// builds the reconstruction under testdataDir/version.
func openImage(cfg Config, spec SourceSpec, pinned, testdataDir, version string) (imagesource.Source, error) {
	opts := []imagesource.Option{}
	// Only network sources are cached: a layout is already local, and
	// copying it would only add a second place for bytes to rot.
	if remote := spec.Kind == SourceRegistry || spec.Kind == SourceSubstitute; remote && cfg.CacheDir != "" {
		opts = append(opts, imagesource.WithCache(cfg.CacheDir))
	}
	if cfg.Transport != nil {
		opts = append(opts, imagesource.WithTransport(cfg.Transport))
	}
	if cfg.Stats != nil {
		opts = append(opts, imagesource.WithStats(cfg.Stats))
	}
	switch spec.Kind {
	case SourceRegistry:
		return imagesource.Registry(pinned, opts...)
	case SourceSubstitute:
		return imagesource.Substitute(pinned, spec.Arg, opts...)
	case SourceOCILayout:
		return imagesource.Layout(pinned, resolve(cfg.Root, spec.Arg), "", opts...)
	case SourceTestdata:
		return testdataSource(cfg.Root, pinned, testdataDir, version)
	}
	return nil, fmt.Errorf("unknown source kind %q", spec.Kind)
}

func resolve(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}

// testdataSource builds the bundled reconstruction of version under
// testdataDir. It is a substitute by construction, and provenance says so.
func testdataSource(root, pinned, testdataDir, version string) (imagesource.Source, error) {
	rel := path.Join(testdataDir, version)
	dir := filepath.Join(root, filepath.FromSlash(rel))
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("no reconstruction of %s at %s: add one, or extract from the real image with --source registry", version, rel)
	}
	img, err := reconstruction.Build(dir)
	if err != nil {
		return nil, fmt.Errorf("build reconstruction %s: %w", rel, err)
	}
	d, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("digest reconstruction %s: %w", rel, err)
	}
	return imagesource.FromImage(pinned, SourceTestdata, rel+"@"+d.String(), img), nil
}

// TestdataDigest is the manifest digest of the bundled reconstruction of
// version under testdataDir (TestdataDir or DaemonTestdataDir): what a
// `--source testdata` read of that version records, so a rehearsal can pin
// it as the substitute it is.
func TestdataDigest(root, testdataDir, version string) (string, error) {
	src, err := testdataSource(root, "", testdataDir, version)
	if err != nil {
		return "", err
	}
	img, err := src.Image(context.Background())
	if err != nil {
		return "", err
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

func scanImage(ctx context.Context, cfg Config, img v1.Image) (*imagefs.Result, error) {
	wants := Wants()
	opts := []imagefs.Option{imagefs.WithLimits(cfg.Limits), imagefs.WithList(PluginDir)}
	if cfg.Progress != nil {
		opts = append(opts, imagefs.WithProgress(cfg.Progress))
	}
	res, err := imagefs.Scan(ctx, img, wants, opts...)
	var missing *imagefs.MissingError
	switch {
	case err == nil:
		return res, nil
	case errors.As(err, &missing):
		return nil, fmt.Errorf("installer %s does not have the expected layout: %w (tcpxogen reads the v1.0.15 layout; a moved or renamed script needs a tcpxogen change)", cfg.BOM.Images.Installer.Version, err)
	}
	return nil, fmt.Errorf("read installer image: %w", err)
}

// Wants are the files extraction reads from the installer image; the bench
// scans for the same set.
func Wants() []imagefs.Want {
	return []imagefs.Want{
		{Path: DefaultProfilePath, Content: true},
		{Path: SimpleProfilePath, Content: true},
		{Path: EntryScriptPath},
		{Path: NCCLLibPath},
		{Path: SSHDConfigPath, Content: true},
		{Path: DefaultGuestConfigPath, Content: true},
		{Path: SimpleGuestConfigPath, Content: true},
		{Path: AllReducePerfMPIPath},
	}
}

var ncclSoname = regexp.MustCompile(`^libnccl\.so\.(\d+\.\d+\.\d+)$`)

func assemble(ctx context.Context, cfg Config, scan *imagefs.Result) (*facts.Facts, error) {
	lib := scan.Files[NCCLLibPath]
	m := ncclSoname.FindStringSubmatch(path.Base(lib.Resolved))
	if m == nil {
		return nil, fmt.Errorf("%s resolves to %s, which is not libnccl.so.X.Y.Z: cannot tell the NCCL version", NCCLLibPath, lib.Resolved)
	}
	f := &facts.Facts{
		PluginVersion:  cfg.BOM.Images.Installer.Version,
		InstallerImage: cfg.BOM.Images.Installer.Reference,
		DaemonImage:    cfg.BOM.Images.Daemon.Reference,
		DaemonVersion:  cfg.BOM.Images.Daemon.Version,
		NCCLVersion:    m[1],
		LibDir:         cfg.LibDir,
	}
	listing := scan.Listings[PluginDir]
	f.PluginFiles, f.PluginFilesComplete = append([]string(nil), listing.Entries...), listing.Complete
	var err error
	if f.DefaultProfile, f.Provenance.DefaultProfileSHA256, err = evaluate(ctx, cfg, scan, DefaultProfilePath, f); err != nil {
		return nil, err
	}
	if f.SimpleProfile, f.Provenance.SimpleProfileSHA256, err = evaluate(ctx, cfg, scan, SimpleProfilePath, f); err != nil {
		return nil, err
	}
	f.Normalized = slices.Compact(slices.Sorted(slices.Values(f.Normalized)))
	if f.DefaultGuestRules, f.Provenance.DefaultGuestConfigSHA256, err = guestRules(fabric.TCPXORules, scan, DefaultGuestConfigPath, path.Base(DefaultProfilePath), f.DefaultProfile); err != nil {
		return nil, fmt.Errorf("installer %s: %w", cfg.BOM.Images.Installer.Version, err)
	}
	if f.SimpleGuestRules, f.Provenance.SimpleGuestConfigSHA256, err = guestRules(fabric.TCPXORules, scan, SimpleGuestConfigPath, path.Base(SimpleProfilePath), f.SimpleProfile); err != nil {
		return nil, fmt.Errorf("installer %s: %w", cfg.BOM.Images.Installer.Version, err)
	}
	return f, nil
}

func evaluate(ctx context.Context, cfg Config, scan *imagefs.Result, p string, f *facts.Facts) ([]facts.EnvVar, string, error) {
	script := scan.Files[p].Data
	sum := sha256.Sum256(script)
	res, err := profile.Evaluate(ctx, path.Base(p), script, profile.Options{LibDir: cfg.LibDir})
	if err != nil {
		return nil, "", fmt.Errorf("evaluate %s from installer %s: %w", p, cfg.BOM.Images.Installer.Version, err)
	}
	if len(res.Vars) == 0 {
		return nil, "", fmt.Errorf("%s exported no variables: refusing to pin an empty NCCL profile", p)
	}
	vars := make([]facts.EnvVar, 0, len(res.Vars))
	for _, v := range res.Vars {
		vars = append(vars, facts.EnvVar{Name: v.Name, Value: v.Value})
	}
	for _, r := range res.Refused {
		f.Refused = append(f.Refused, fmt.Sprintf("%s: %s (line %d)", path.Base(p), r.Command, r.Line))
	}
	f.Normalized = append(f.Normalized, res.Normalized...)
	return vars, hex.EncodeToString(sum[:]), nil
}

// checkReferencedFiles fails extraction when a profile points NCCL at a file
// the installer does not ship: NCCL would silently run without its tuner or
// guest config. Files not seen while reading the required layers are looked
// up explicitly, which may read further layers.
func checkReferencedFiles(ctx context.Context, cfg Config, img v1.Image, f *facts.Facts, scan *imagefs.Result) error {
	var unseen []imagefs.Want
	for _, name := range facts.ReferencedPluginFiles(f.LibDir, f.DefaultProfile, f.SimpleProfile) {
		if !slices.Contains(f.PluginFiles, name) {
			unseen = append(unseen, imagefs.Want{Path: path.Join(PluginDir, name)})
		}
	}
	if len(unseen) == 0 {
		return nil
	}
	if f.PluginFilesComplete {
		return fmt.Errorf("the profiles reference %s, which installer %s does not ship under %s", wantPaths(unseen), cfg.BOM.Images.Installer.Version, PluginDir)
	}
	res, err := imagefs.Scan(ctx, img, unseen, imagefs.WithLimits(cfg.Limits))
	if err != nil {
		return fmt.Errorf("the profiles reference files under %s: %w", PluginDir, err)
	}
	for _, w := range unseen {
		f.PluginFiles = append(f.PluginFiles, path.Base(res.Files[w.Path].Path))
	}
	sort.Strings(f.PluginFiles)
	return nil
}

func wantPaths(ws []imagefs.Want) string {
	ps := make([]string, len(ws))
	for i, w := range ws {
		ps[i] = w.Path
	}
	return strings.Join(ps, ", ")
}
