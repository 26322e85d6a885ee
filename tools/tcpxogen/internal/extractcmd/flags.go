package extractcmd

import (
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/tcpxogen/tcpxogen/internal/imagefs"
	"github.com/tcpxogen/tcpxogen/pipeline/extract"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// checkFlags refuses, before any image is opened, the flag values
// extract would otherwise only fail on deep inside a run, with exit 1 and a
// message naming Go identifiers (Limits.MaxCompressedBytes, LibDir): they
// are bad usage (exit 2), and the message names the flag.
// A relative layout directory is under root, as extract resolves it.
func checkFlags(root string, lim imagefs.Limits, libDir string, sources map[string]extract.SourceSpec) error {
	for flag, v := range map[string]int64{
		"--max-read-bytes":     lim.MaxCompressedBytes,
		"--max-expanded-bytes": lim.MaxExpandedBytes,
		"--max-file-bytes":     lim.MaxFileBytes,
	} {
		if v < 0 {
			return cli.BadInput("%s is %d: give a positive number of bytes, or 0 for the default", flag, v)
		}
	}
	if !path.IsAbs(libDir) || path.Clean(libDir) != libDir || strings.Contains(libDir, ":") {
		return cli.BadInput("--lib-dir %q must be an absolute, clean path without ':' (the directory NCCL_LIB_DIR names inside the container), such as %s", libDir, extract.DefaultLibDir)
	}
	for flag, spec := range sources {
		switch spec.Kind {
		case extract.SourceOCILayout:
			dir := spec.Arg
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(root, dir)
			}
			if _, err := os.Stat(filepath.Join(dir, "index.json")); err != nil {
				return cli.BadInput("%s %s: %s is not an OCI image layout (it has no readable index.json: %w); write one with crane pull --format=oci", flag, spec.Raw, spec.Arg, err)
			}
		case extract.SourceSubstitute:
			if _, err := name.NewDigest(spec.Arg, name.StrictValidation); err != nil {
				return cli.BadInput("%s %q is not a valid REGISTRY/REPO[:TAG]@sha256:DIGEST reference: %w", flag, spec.Raw, err)
			}
		}
	}
	return nil
}
