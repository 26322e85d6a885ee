package extract

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/internal/emit"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/imagefs"
	"github.com/tcpxogen/tcpxogen/internal/imagesource"
	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/internal/profile"
)

// The gIB installer's layout. No public Dockerfile or source tree of the
// gIB installer exists, so this layout is tcpxogen's BELIEF, written down
// in testdata/gib-installer/v1.1.2/README.md: what Google's manifests run
// (/scripts/container_entry.sh install --install-nccl, then a copy of
// /var/lib/gib to the host) and what Google's docs say the installed
// payload holds (lib64/, scripts/set_nccl_env.sh, configs/). Where in the
// image the payload sits before the entry script copies it is the belief
// (/opt/gib). Only the published image can confirm it: an image laid out
// otherwise is refused with where it has the script and configs, so the
// first extraction from the real image corrects this table, never guesses.
const (
	GIBPayloadDir  = "/opt/gib"
	GIBEnvScript   = GIBPayloadDir + "/scripts/set_nccl_env.sh"
	GIBLibDir      = GIBPayloadDir + "/lib64"
	GIBConfigDir   = GIBPayloadDir + "/configs"
	GIBEntryScript = "/scripts/container_entry.sh"

	// GIBMountPath is where a workload pod sees the installed payload:
	// Google's manifests mount the host's /home/kubernetes/bin/gib there.
	GIBMountPath = "/usr/local/gib"

	// GIBTestdataDir and GIBDiagnosticTestdataDir hold the reconstructions.
	GIBTestdataDir           = "testdata/gib-installer"
	GIBDiagnosticTestdataDir = "testdata/gib-diagnostic"
)

// The gIB diagnostic image's layout: what Google's NCCL test for A3 Ultra
// and A4 runs from it (nccl-tests over MPI, sshd on port 222; the project's
// facts for gIB). Where the MPI build sits is tcpxogen's BELIEF,
// written down in testdata/gib-diagnostic/v1.1.2/README.md: the path
// TCPXO's installer image uses, and its sshd_config at the standard
// place. No public Dockerfile or source of the image exists; an image that
// lacks a file here is refused with where it has the nccl-tests binaries.
const (
	GIBNCCLTestsDir         = "/third_party/nccl-tests-mpi/build"
	GIBAllGatherPerfMPIPath = GIBNCCLTestsDir + "/all_gather_perf"
	GIBAllReducePerfMPIPath = GIBNCCLTestsDir + "/all_reduce_perf"
)

// gpuNameProbe is the one machine probe the sandbox answers for gIB's env
// script: the GPU's name, from which a script can tell A3 Ultra (H200) from
// A4 (B200). Any other probe is refused, and an export that depends on it
// fails the extraction naming the command.
var gpuNameProbe = []string{"nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "--id=0"}

// machineAnswers is what a node of machine type m answers.
func machineAnswers(m fabric.MachineType) []profile.Answer {
	return []profile.Answer{{Args: gpuNameProbe, Stdout: m.GPUName + "\n"}}
}

// RunGIB extracts the gIB fabric's facts from cfg.BOM's gIB installer: the
// env set_nccl_env.sh exports on each gIB machine type, the checker rules
// the env points at, the files the env names, the NCCL version and the
// payload libraries' DT_NEEDED, and the entrypoint the installer DaemonSet
// runs, from cfg.GIBSource (by default the source the committed
// generated/gib records, so a regeneration or a TCPXO bump re-reads gIB
// from where it was last read).
//
// The diagnostic image (cfg.GIBDiagnosticSource, by default the source the
// committed generated/gib records for it, else the installer's when that
// is the bundled reconstruction, else the registry) gives the benchmark's
// facts: the port its sshd_config sets, its MPI builds of all_gather_perf
// and all_reduce_perf, and its entrypoint.
func RunGIB(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.LibDir == "" {
		cfg.LibDir = DefaultLibDir
	}
	if cfg.GIBSource.Kind == "" || cfg.GIBDiagnosticSource.Kind == "" {
		installer, diagnostic, err := RecordedGIBSources(cfg.Root)
		if err != nil {
			return nil, err
		}
		if cfg.GIBSource.Kind == "" {
			cfg.GIBSource = installer
		}
		if cfg.GIBDiagnosticSource.Kind == "" {
			cfg.GIBDiagnosticSource = diagnostic
			if diagnostic.Kind == "" {
				cfg.GIBDiagnosticSource = DefaultDaemonSource(cfg.GIBSource)
			}
		}
	}
	pin := cfg.BOM.Images.GIBInstaller
	src, err := openImage(cfg, cfg.GIBSource, pin.Reference, GIBTestdataDir, pin.Version)
	if err != nil {
		return nil, err
	}
	diag := cfg.BOM.Images.GIBDiagnostic
	dsrc, err := openImage(cfg, cfg.GIBDiagnosticSource, diag.Reference, GIBDiagnosticTestdataDir, diag.Version)
	if err != nil {
		return nil, err
	}
	return runGIB(ctx, cfg, src, dsrc)
}

func runGIB(ctx context.Context, cfg Config, src, dsrc imagesource.Source) (*Result, error) {
	pin := cfg.BOM.Images.GIBInstaller
	img, err := src.Image(ctx)
	if err != nil {
		return nil, fmt.Errorf("open gIB installer image: %w", err)
	}
	what := "gIB installer " + pin.Version
	scan, err := imagefs.Scan(ctx, img, []imagefs.Want{{Path: GIBEnvScript, Content: true}, {Path: GIBEntryScript}},
		imagefs.WithLimits(cfg.Limits), imagefs.WithList(GIBLibDir), imagefs.WithList(GIBConfigDir))
	var missing *imagefs.MissingError
	if errors.As(err, &missing) {
		return nil, layoutError(ctx, cfg, img, what, missing)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	f := &facts.Facts{
		Fabric:          fabric.GIB.Name,
		PluginVersion:   pin.Version,
		InstallerImage:  pin.Reference,
		DiagnosticImage: cfg.BOM.Images.GIBDiagnostic.Reference,
		LibDir:          cfg.LibDir,
		PayloadDir:      GIBPayloadDir,
	}
	script := scan.Files[GIBEnvScript].Data
	sum := sha256.Sum256(script)
	f.Provenance.DefaultProfileSHA256 = hex.EncodeToString(sum[:])
	for _, m := range fabric.GIB.MachineTypes {
		env, err := evaluateOn(ctx, cfg, script, m, f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		f.MachineProfiles = append(f.MachineProfiles, facts.MachineProfile{MachineType: m.Name, Env: env})
	}
	f.Refused = slices.Compact(slices.Sorted(slices.Values(f.Refused)))
	f.Normalized = slices.Compact(slices.Sorted(slices.Values(f.Normalized)))

	if err := gibFiles(ctx, cfg, img, scan, f); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	libs := scan.Listings[GIBLibDir]
	f.PluginFiles, f.PluginFilesComplete = slices.Clone(libs.Entries), libs.Complete
	if f.NCCLVersion, err = ncclVersionIn(libs.Entries); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	// The payload's lib64 holds NCCL core beside the plugin libraries. The
	// worker's CUDA rule is the plugins' DT_NEEDED; NCCL core (hundreds of
	// MB in a release, over what a plugin library may be read at) is not
	// read, as TCPXO's, which sits outside /plugins, is not.
	plugins := slices.DeleteFunc(slices.Clone(libs.Entries), isNCCLCore)
	if f.PluginLibraries, err = libraries(ctx, cfg, img, GIBLibDir, plugins); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read %s image config: %w", what, err)
	}
	f.InstallerEntrypoint = slices.Clone(cf.Config.Entrypoint)
	if len(f.InstallerEntrypoint) == 0 || f.InstallerEntrypoint[0] != GIBEntryScript {
		return nil, fmt.Errorf("%s: the image's entrypoint is %q, not %s: Google's nccl-rdma-installer runs that script; a changed entrypoint needs a tcpxogen change", what, f.InstallerEntrypoint, GIBEntryScript)
	}
	f.Scripts = []string{GIBEntryScript}
	p := src.Describe()
	f.Provenance.Pinned, f.Provenance.Source = pin.Reference, cfg.GIBSource.Raw
	f.Provenance.Kind, f.Provenance.Read, f.Provenance.Digest, f.Provenance.Substituted = p.Kind, p.Read, p.Digest, p.Substituted
	if err := diagnosticFacts(ctx, cfg, dsrc, f); err != nil {
		return nil, err
	}
	return &Result{Facts: f, Scan: scan.Stats}, nil
}

// diagnosticFacts reads what the gIB benchmark runs from the diagnostic
// image: the port its sshd_config sets, its MPI builds of all_gather_perf
// and all_reduce_perf (present, never guessed), and its entrypoint. An
// image without a Port line is refused: Google's test dials the port the
// image sets (222), and an image that sets none is not the one we believe
// in.
func diagnosticFacts(ctx context.Context, cfg Config, dsrc imagesource.Source, f *facts.Facts) error {
	pin := cfg.BOM.Images.GIBDiagnostic
	what := "gIB diagnostic image " + pin.Version
	img, err := dsrc.Image(ctx)
	if err != nil {
		return fmt.Errorf("open %s: %w", what, err)
	}
	scan, err := imagefs.Scan(ctx, img, []imagefs.Want{
		{Path: SSHDConfigPath, Content: true},
		{Path: GIBAllGatherPerfMPIPath},
		{Path: GIBAllReducePerfMPIPath},
	}, imagefs.WithLimits(cfg.Limits))
	var missing *imagefs.MissingError
	if errors.As(err, &missing) {
		return diagnosticLayoutError(ctx, cfg, img, what, missing)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	port, set, err := sshdPortSet(SSHDConfigPath, scan.Files[SSHDConfigPath].Data)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", what, err)
	case !set:
		return fmt.Errorf("%s: %s sets no Port: Google's NCCL test dials the port the diagnostic image's sshd listens on (222), so tcpxogen reads it from this file and will not assume sshd's default; check the image's sshd setup and correct pipeline/extract/gib.go and %s/%s/README.md",
			what, SSHDConfigPath, GIBDiagnosticTestdataDir, pin.Version)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("read %s image config: %w", what, err)
	}
	f.SSHDPort = port
	f.AllGatherPerfMPI, f.AllReducePerfMPI = GIBAllGatherPerfMPIPath, GIBAllReducePerfMPIPath
	f.DiagnosticEntrypoint = slices.Clone(cf.Config.Entrypoint)
	p := dsrc.Describe()
	f.DiagnosticProvenance = facts.ImageProvenance{Pinned: pin.Reference, Source: cfg.GIBDiagnosticSource.Raw,
		Kind: p.Kind, Read: p.Read, Digest: p.Digest, Substituted: p.Substituted}
	if cfg.GIBDiagnosticSource.Kind == SourceOCILayout {
		// The directory as the user named it, as Run records the installer's.
		f.DiagnosticProvenance.Read = cfg.GIBDiagnosticSource.Arg + "@" + p.Digest
	}
	return nil
}

// perfNames are the files a diagnostic layout refusal reports: every
// nccl-tests binary and sshd_config, wherever the image has them.
var perfNames = regexp.MustCompile(`(^|/)([a-z_]+_perf(_mpi)?|sshd_config)$`)

// diagnosticLayoutError refuses a diagnostic image that lacks the sshd
// config or an MPI perf binary, naming each missing file and listing where
// the image has nccl-tests binaries and sshd configs.
func diagnosticLayoutError(ctx context.Context, cfg Config, img v1.Image, what string, missing *imagefs.MissingError) error {
	var lacks []string
	for _, p := range missing.Paths {
		switch p {
		case SSHDConfigPath:
			lacks = append(lacks, p+" (the port the benchmark's sshd listens on and the launcher dials)")
		default:
			lacks = append(lacks, p+" (the MPI build of "+path.Base(p)+" the benchmark runs)")
		}
	}
	found, err := locate(ctx, cfg, img, perfNames)
	where := "the image has no *_perf binary and no sshd_config anywhere"
	switch {
	case err != nil:
		where = "listing where the image has them failed: " + err.Error()
	case len(found) > 0:
		if len(found) > 20 {
			found = append(found[:20], fmt.Sprintf("… %d more", len(found)-20))
		}
		where = "the image has " + strings.Join(found, ", ")
	}
	return fmt.Errorf("%s lacks %s: %w; %s. The layout is a belief (no public source exists): check the real image and correct it in pipeline/extract/gib.go and %s/%s/README.md",
		what, strings.Join(lacks, ", "), missing, where, GIBDiagnosticTestdataDir, cfg.BOM.Images.GIBDiagnostic.Version)
}

// RecordedGIBSources are the sources the committed gIB facts under root
// were read from, the installer's and the diagnostic image's; testdata for
// both when there are none yet, and a zero diagnostic source when the
// facts record none.
func RecordedGIBSources(root string) (installer, diagnostic SourceSpec, err error) {
	p := filepath.Join(root, filepath.FromSlash(generated.GIBFactsFile))
	src, err := inputfile.Read(p, inputfile.Spec{What: "generated file", Max: inputfile.MaxSource})
	if errors.Is(err, fs.ErrNotExist) {
		td := SourceSpec{Kind: SourceTestdata, Raw: SourceTestdata}
		return td, td, nil
	}
	if err != nil {
		return SourceSpec{}, SourceSpec{}, fmt.Errorf("read recorded gIB provenance: %w", err)
	}
	f, err := emit.ParseLiteral(generated.GIBFactsFile, src)
	if err != nil {
		return SourceSpec{}, SourceSpec{}, fmt.Errorf("read recorded gIB provenance: %w (restore the file with git checkout)", err)
	}
	if f.Provenance.Source == "" {
		return SourceSpec{}, SourceSpec{}, fmt.Errorf("%s records no source: restore the file with git checkout", generated.GIBFactsFile)
	}
	if installer, err = ParseSource(f.Provenance.Source); err != nil {
		return SourceSpec{}, SourceSpec{}, err
	}
	if f.DiagnosticProvenance.Source != "" {
		if diagnostic, err = ParseSource(f.DiagnosticProvenance.Source); err != nil {
			return SourceSpec{}, SourceSpec{}, fmt.Errorf("%s diagnostic source: %w", generated.GIBFactsFile, err)
		}
	}
	return installer, diagnostic, nil
}

// evaluateOn runs the env script as machine type m would: in the sandbox,
// with m's declared answers. What the script exports is the env; an export
// that depends on anything the sandbox refused is an error.
func evaluateOn(ctx context.Context, cfg Config, script []byte, m fabric.MachineType, f *facts.Facts) ([]facts.EnvVar, error) {
	name := path.Base(GIBEnvScript)
	res, err := profile.Evaluate(ctx, name, script, profile.Options{LibDir: cfg.LibDir, Answers: machineAnswers(m)})
	if err != nil {
		return nil, fmt.Errorf("evaluate %s as on %s: %w", GIBEnvScript, m.Name, err)
	}
	if len(res.Vars) == 0 {
		return nil, fmt.Errorf("%s exported no variables on %s: refusing to pin an empty NCCL env", GIBEnvScript, m.Name)
	}
	env := make([]facts.EnvVar, len(res.Vars))
	for i, v := range res.Vars {
		env[i] = facts.EnvVar{Name: v.Name, Value: v.Value}
	}
	for _, r := range res.Refused {
		f.Refused = append(f.Refused, fmt.Sprintf("%s: %s (line %d)", name, r.Command, r.Line))
	}
	f.Normalized = append(f.Normalized, res.Normalized...)
	return env, nil
}

// gibFiles checks that every payload file the env names (as a pod sees it,
// under GIBMountPath) is in the image, and reads the checker rules the env
// points at: one checker file for every machine type, which each machine's
// env must keep.
func gibFiles(ctx context.Context, cfg Config, img v1.Image, scan *imagefs.Result, f *facts.Facts) error {
	named := map[string]bool{}
	checker := ""
	for _, m := range f.MachineProfiles {
		for _, v := range m.Env {
			for _, elem := range strings.FieldsFunc(v.Value, func(r rune) bool { return r == ':' || r == ',' }) {
				if rel, ok := strings.CutPrefix(elem, GIBMountPath+"/"); ok && path.Clean(rel) == rel {
					named[rel] = true
				}
			}
			if v.Name == guestConfigVar {
				rel, ok := strings.CutPrefix(v.Value, GIBMountPath+"/")
				switch {
				case !ok:
					return fmt.Errorf("%s on %s points the config checker at %s, outside the payload %s", GIBEnvScript, m.MachineType, v.Value, GIBMountPath)
				case checker != "" && checker != rel:
					return fmt.Errorf("%s points the config checker at %s on one machine type and %s on another: tcpxogen pins one checker config", GIBEnvScript, checker, rel)
				}
				checker = rel
			}
		}
	}
	if checker == "" {
		return fmt.Errorf("%s sets no %s: the config checker would run with no rules tcpxogen can check TrainJobs against", GIBEnvScript, guestConfigVar)
	}
	wants := []imagefs.Want{}
	for _, rel := range slices.Sorted(maps.Keys(named)) {
		wants = append(wants, imagefs.Want{Path: path.Join(GIBPayloadDir, rel), Content: rel == checker})
	}
	res, err := imagefs.Scan(ctx, img, wants, imagefs.WithLimits(cfg.Limits))
	var missing *imagefs.MissingError
	if errors.As(err, &missing) {
		var lacks []string
		for _, p := range missing.Paths {
			lacks = append(lacks, GIBMountPath+strings.TrimPrefix(p, GIBPayloadDir)+" (image "+p+")")
		}
		return fmt.Errorf("the env names %s, which the image lacks: NCCL would run without them", strings.Join(lacks, ", "))
	}
	if err != nil {
		return fmt.Errorf("read the files the env names: %w", err)
	}
	for _, rel := range slices.Sorted(maps.Keys(named)) {
		f.ConfigFiles = append(f.ConfigFiles, path.Join(GIBMountPath, rel))
	}
	checkerPath := path.Join(GIBPayloadDir, checker)
	for i, m := range f.MachineProfiles {
		rules, sum, err := guestRules(fabric.GIBRules, res, checkerPath, path.Base(GIBEnvScript)+" on "+m.MachineType, m.Env)
		if err != nil {
			return err
		}
		if i == 0 {
			f.DefaultGuestRules, f.Provenance.DefaultGuestConfigSHA256 = rules, sum
		}
	}
	return nil
}

// ncclCore matches NCCL core's file and its links: libnccl.so,
// libnccl.so.2, libnccl.so.2.30.4 (not libnccl-net.so, a plugin).
var ncclCore = regexp.MustCompile(`^libnccl\.so(\.[0-9]+)*$`)

func isNCCLCore(name string) bool { return ncclCore.MatchString(name) }

// ncclVersionIn reads the NCCL version from the libnccl.so.X.Y.Z the
// payload's lib64 holds; none or two versions is an error.
func ncclVersionIn(entries []string) (string, error) {
	var versions []string
	for _, e := range entries {
		if m := ncclSoname.FindStringSubmatch(e); m != nil {
			versions = append(versions, m[1])
		}
	}
	if len(versions) != 1 {
		return "", fmt.Errorf("%s holds %d libnccl.so.X.Y.Z files (%s), want exactly one: cannot tell the NCCL version", GIBLibDir, len(versions), strings.Join(versions, ", "))
	}
	return versions[0], nil
}

// layoutNames are the files whose whereabouts a layout refusal reports.
var layoutNames = regexp.MustCompile(`(^|/)(set_nccl_env\.sh|container_entry\.sh|[^/]*\.txtpb|libnccl[^/]*\.so[^/]*)$`)

// layoutError refuses an image laid out otherwise than tcpxogen believes,
// listing where the image has the env script, the entry script, the
// configs and the NCCL libraries, so the layout can be corrected from the
// image rather than guessed.
func layoutError(ctx context.Context, cfg Config, img v1.Image, what string, missing *imagefs.MissingError) error {
	found, err := locate(ctx, cfg, img, layoutNames)
	where := "the image has none of set_nccl_env.sh, container_entry.sh, *.txtpb or libnccl*.so anywhere"
	switch {
	case err != nil:
		where = "listing where the image has them failed: " + err.Error()
	case len(found) > 0:
		if len(found) > 20 {
			found = append(found[:20], fmt.Sprintf("… %d more", len(found)-20))
		}
		where = "the image has " + strings.Join(found, ", ")
	}
	return fmt.Errorf("%s is not laid out as tcpxogen believes (payload at %s: scripts/set_nccl_env.sh, lib64/, configs/; entry %s; %s): %w; %s. "+
		"The layout is a belief (no public source exists): check the real image and correct it in pipeline/extract/gib.go and %s",
		what, GIBPayloadDir, GIBEntryScript, GIBTestdataDir+"/"+cfg.BOM.Images.GIBInstaller.Version+"/README.md", missing, where, GIBTestdataDir)
}

// locate walks every layer of img for regular files whose path matches re,
// within the scan limits: a refusal's evidence, not a read of facts. A
// file a later layer deletes (a whiteout, an opaque directory) is not
// listed.
func locate(ctx context.Context, cfg Config, img v1.Image, re *regexp.Regexp) ([]string, error) {
	lim := cfg.Limits
	if lim.MaxExpandedBytes == 0 {
		lim.MaxExpandedBytes = imagefs.DefaultLimits().MaxExpandedBytes
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var total int64
	for _, l := range layers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, err
		}
		tr := tar.NewReader(rc)
		// This layer's deletions apply to the layers below it, whatever
		// their order in its tar; its own files are added after them.
		var added, deleted []string
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				rc.Close()
				return nil, err
			}
			if total += h.Size; total > lim.MaxExpandedBytes {
				rc.Close()
				return nil, fmt.Errorf("the image expands past %d bytes", lim.MaxExpandedBytes)
			}
			name := "/" + strings.TrimPrefix(path.Clean("/"+h.Name), "/")
			dir, base := path.Split(name)
			switch {
			case base == ".wh..wh..opq":
				deleted = append(deleted, path.Clean(dir))
			case strings.HasPrefix(base, ".wh."):
				deleted = append(deleted, path.Join(dir, strings.TrimPrefix(base, ".wh.")))
			case (h.Typeflag == tar.TypeReg || h.Typeflag == tar.TypeSymlink) && re.MatchString(name):
				added = append(added, name)
			}
		}
		rc.Close()
		for _, d := range deleted {
			for name := range seen {
				if name == d || strings.HasPrefix(name, strings.TrimSuffix(d, "/")+"/") {
					delete(seen, name)
				}
			}
		}
		for _, name := range added {
			seen[name] = true
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}
