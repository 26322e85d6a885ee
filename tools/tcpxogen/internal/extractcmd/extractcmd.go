// Package extractcmd implements `tcpxogen extract`. It links nothing
// compiled against generated/: it must keep working when the generated file
// is missing or hand-broken, because it is what regenerates it.
package extractcmd

import (
	"context"
	"errors"
	"fmt"
	"go/token"
	"path/filepath"
	"strings"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/atomicfile"
	"github.com/tcpxogen/tcpxogen/internal/emit"
	"github.com/tcpxogen/tcpxogen/internal/imagefs"
	"github.com/tcpxogen/tcpxogen/pipeline/extract"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// GeneratedFile is the emitted file's name inside --out.
const GeneratedFile = "zz_generated.go"

// Commands returns the extract command.
func Commands() cli.Commands {
	return cli.Commands{"extract": {Summary: "read the pinned installer image and emit generated/tcpxo", Run: run}}
}

func run(ctx context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("extract", "extract [--bom FILE] [--source registry|testdata|oci-layout:DIR|REGISTRY/REPO@sha256:DIGEST] [--out DIR] [--package NAME]", s)
	root := fs.String("root", "", "repository root (default: the directory holding tcpxogen's go.mod, found upwards from the working directory)")
	bomPath := fs.String("bom", bom.RepoPath, "bill of materials; a relative path is relative to --root")
	releasesPath := fs.String("releases", bom.ReleasesRepoPath, "published release pairs; a relative path is relative to --root")
	source := fs.String("source", "", "where to read the installer image: registry (the pinned reference), testdata (the bundled reconstruction), oci-layout:DIR, or a substitute REGISTRY/REPO@sha256:DIGEST; default: the source recorded in the existing generated file")
	daemonSource := fs.String("daemon-source", "", "where to read the tcpxo-daemon image, same forms as --source; default: the recorded daemon source, else testdata when --source is testdata, else registry")
	out := fs.String("out", "generated/tcpxo", "output package directory; a relative path is relative to --root")
	pkg := fs.String("package", "", "Go package name of the emitted file (default: derived from --out's last element)")
	cacheDir := fs.String("cache-dir", cli.DefaultCacheDir(), "content-addressed blob cache (verified on read); empty disables it")
	libDir := fs.String("lib-dir", extract.DefaultLibDir, "NCCL_LIB_DIR the profiles are evaluated with")
	lim := imagefs.DefaultLimits()
	fs.Int64Var(&lim.MaxCompressedBytes, "max-read-bytes", lim.MaxCompressedBytes, "most layer bytes one scan may fetch")
	fs.Int64Var(&lim.MaxExpandedBytes, "max-expanded-bytes", lim.MaxExpandedBytes, "most uncompressed bytes one scan may process")
	fs.Int64Var(&lim.MaxFileBytes, "max-file-bytes", lim.MaxFileBytes, "largest file content that may be extracted")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	// Checked before any work: a bad package name used to surface only after
	// the whole extraction, as a gofmt error over the emitted source.
	pkgName, err := packageName(*pkg, *out)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	r, err := bom.ResolveRoot(*root)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	b, _, err := bom.LoadAll(underRoot(r, *bomPath), underRoot(r, *releasesPath))
	if err != nil {
		return cli.BadInput("%w", err)
	}
	target := filepath.Join(underRoot(r, *out), GeneratedFile)
	spec, dspec, err := extract.ResolveSources(*source, *daemonSource, target)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	if err := checkFlags(r, lim, *libDir, map[string]extract.SourceSpec{"--source": spec, "--daemon-source": dspec}); err != nil {
		return err
	}
	cfg := extract.Config{Root: r, BOM: b, Source: spec, DaemonSource: dspec, CacheDir: *cacheDir, LibDir: *libDir, Limits: lim}
	if cli.IsTerminal(s.Err) {
		cfg.Progress = s.Err
	}
	res, err := extract.Run(ctx, cfg)
	if err != nil {
		return withLimitFlag(err)
	}
	code, err := emit.Go(pkgName, res.Facts)
	if err != nil {
		return err
	}
	changed, err := atomicfile.Set{target: code}.Commit(0o644)
	if err != nil {
		return err
	}
	p := res.Facts.Provenance
	state := "unchanged"
	if len(changed) > 0 {
		state = "written"
	}
	d := res.Facts.DaemonProvenance
	fmt.Fprintf(s.Err, "extract: installer %s read from %s (%s, %s): %d+%d profile variables, NCCL %s, CUDA %s, sshd port %d; %d of %d layers, %d bytes read; daemon %s read from %s (%s); %s %s\n",
		res.Facts.PluginVersion, p.Read, p.Kind, substituted(p.Substituted), len(res.Facts.DefaultProfile), len(res.Facts.SimpleProfile),
		res.Facts.NCCLVersion, res.Facts.CUDAVersion, res.Facts.SSHDPort, res.Scan.LayersRead, res.Scan.LayersTotal, res.Scan.CompressedBytes,
		b.Images.Daemon.Version, d.Read, substituted(d.Substituted), filepath.Join(*out, GeneratedFile), state)
	return nil
}

func substituted(b bool) string {
	if b {
		return "SUBSTITUTE for the pinned image"
	}
	return "the pinned image"
}

// underRoot resolves a path flag: an absolute path is used as given, a
// relative one is relative to the repository root.
func underRoot(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}

// packageName is --package if given, else the last element of --out made
// into a Go package name the way one would by hand: lower case, with the
// characters an identifier cannot hold dropped ("out-1" becomes "out1").
func packageName(flag, out string) (string, error) {
	if flag != "" {
		if !token.IsIdentifier(flag) || token.IsKeyword(flag) {
			return "", fmt.Errorf("--package %q is not a Go package name", flag)
		}
		return flag, nil
	}
	base := filepath.Base(filepath.Clean(out))
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return -1
	}, base)
	if !token.IsIdentifier(name) || token.IsKeyword(name) {
		return "", fmt.Errorf("--out %s: no Go package name can be derived from %q; pass --package NAME", out, base)
	}
	return name, nil
}

// limitFlags maps imagefs limits to the flags that raise them, so a limit
// error tells a CLI user what to type rather than which Go field to set.
var limitFlags = map[string]string{
	"MaxCompressedBytes": "--max-read-bytes",
	"MaxExpandedBytes":   "--max-expanded-bytes",
	"MaxFileBytes":       "--max-file-bytes",
}

func withLimitFlag(err error) error {
	var le *imagefs.LimitError
	if errors.As(err, &le) {
		if flag, ok := limitFlags[le.Limit]; ok {
			return fmt.Errorf("%w (raise it with %s)", err, flag)
		}
	}
	return err
}
