package extract

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/tcpxogen/tcpxogen/internal/emit"
	"github.com/tcpxogen/tcpxogen/internal/inputfile"
)

// Source kinds a --source value can name.
const (
	SourceRegistry   = "registry"   // pull the pinned reference
	SourceTestdata   = "testdata"   // build the bundled reconstruction
	SourceOCILayout  = "oci-layout" // oci-layout:DIR
	SourceSubstitute = "registry-substitute"
)

// SourceSpec is a parsed --source value.
type SourceSpec struct {
	Kind string
	Arg  string // DIR for oci-layout, REGISTRY/REPO@sha256:DIGEST for a substitute
	Raw  string
}

// ParseSource parses registry | testdata | oci-layout:DIR |
// REGISTRY/REPO@sha256:DIGEST. A substitute must be pinned by digest: a tag
// could move under us and nothing downstream would notice.
func ParseSource(s string) (SourceSpec, error) {
	switch {
	case s == SourceRegistry || s == SourceTestdata:
		return SourceSpec{Kind: s, Raw: s}, nil
	case strings.HasPrefix(s, SourceOCILayout+":"):
		dir := strings.TrimPrefix(s, SourceOCILayout+":")
		if dir == "" {
			return SourceSpec{}, fmt.Errorf("--source %q names no directory: use oci-layout:DIR", s)
		}
		return SourceSpec{Kind: SourceOCILayout, Arg: dir, Raw: s}, nil
	case strings.Contains(s, "@sha256:"):
		return SourceSpec{Kind: SourceSubstitute, Arg: s, Raw: s}, nil
	case s == "":
		return SourceSpec{}, fmt.Errorf("no --source given and no recorded source: use --source registry|testdata|oci-layout:DIR|REGISTRY/REPO@sha256:DIGEST")
	default:
		return SourceSpec{}, fmt.Errorf("--source %q is not registry, testdata, oci-layout:DIR or REGISTRY/REPO@sha256:DIGEST (a substitute image must be pinned by digest)", s)
	}
}

// ResolveSources resolves --source and --daemon-source: each flag when
// given, else the source recorded in generatedFile (so `go generate`
// reproduces the committed output offline instead of silently switching to
// the network), else, for the daemon, the default that follows the
// installer's source.
func ResolveSources(source, daemonSource, generatedFile string) (SourceSpec, SourceSpec, error) {
	if source == "" {
		recorded, err := RecordedSource(generatedFile)
		if err != nil {
			return SourceSpec{}, SourceSpec{}, err
		}
		source = recorded
	}
	spec, err := ParseSource(source)
	if err != nil {
		return SourceSpec{}, SourceSpec{}, err
	}
	if daemonSource == "" {
		recorded, err := RecordedDaemonSource(generatedFile)
		if err != nil {
			return SourceSpec{}, SourceSpec{}, err
		}
		if recorded == "" {
			return spec, DefaultDaemonSource(spec), nil
		}
		daemonSource = recorded
	}
	dspec, err := ParseSource(daemonSource)
	if err != nil {
		return SourceSpec{}, SourceSpec{}, fmt.Errorf("--daemon-source: %w", err)
	}
	return spec, dspec, nil
}

// RecordedSource returns the ProvenanceSource constant of a previously
// generated file, so `go generate` reproduces the committed output offline
// instead of silently switching to the network. A missing file yields "".
func RecordedSource(generatedFile string) (string, error) {
	return recorded(generatedFile, "ProvenanceSource")
}

// RecordedDaemonSource is RecordedSource for the daemon image. A file
// generated before daemon facts were extracted records none and yields "".
func RecordedDaemonSource(generatedFile string) (string, error) {
	s, err := recorded(generatedFile, "DaemonProvenanceSource")
	if err != nil && strings.Contains(err.Error(), "is missing") {
		return "", nil
	}
	return s, err
}

// DefaultDaemonSource is the daemon source when none is given or recorded:
// the reconstruction next to the installer's, the pinned image otherwise.
func DefaultDaemonSource(installer SourceSpec) SourceSpec {
	if installer.Kind == SourceTestdata {
		return SourceSpec{Kind: SourceTestdata, Raw: SourceTestdata}
	}
	return SourceSpec{Kind: SourceRegistry, Raw: SourceRegistry}
}

func recorded(generatedFile, constant string) (string, error) {
	src, err := inputfile.Read(generatedFile, inputfile.Spec{What: "generated file", Max: inputfile.MaxSource})
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read recorded provenance: %w", err)
	}
	source, err := emit.Constant(generatedFile, src, constant)
	if err != nil {
		return "", fmt.Errorf("read recorded provenance: %w (restore the file with git checkout, or pass --source)", err)
	}
	return source, nil
}
