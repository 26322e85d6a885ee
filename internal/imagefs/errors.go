package imagefs

import (
	"errors"
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ErrUnsafeEntry marks a layer holding a tar entry (or hard-link target) whose
// name climbs above the image root. Such an image is refused outright rather
// than the entry skipped: nothing legitimate produces one.
var ErrUnsafeEntry = errors.New("unsafe tar entry")

// MissingError reports wanted paths the image does not provide as regular
// files. Scan returns it together with a Result holding what was found.
type MissingError struct {
	// Image is the image digest, "" if the image could not report one.
	Image string
	// Paths are the missing wanted paths, sorted.
	Paths []string
	// Reasons explain paths that are not simply absent: hidden by a
	// whiteout, a directory, a dangling symlink. Keyed by path.
	Reasons     map[string]string
	LayersRead  int
	LayersTotal int
}

func (e *MissingError) Error() string {
	var b strings.Builder
	b.WriteString("image ")
	if e.Image != "" {
		b.WriteString(e.Image + " ")
	}
	b.WriteString("has no ")
	for i, p := range e.Paths {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p)
		if r := e.Reasons[p]; r != "" {
			b.WriteString(" (" + r + ")")
		}
	}
	fmt.Fprintf(&b, " (searched %d of %d layers)", e.LayersRead, e.LayersTotal)
	return b.String()
}

// Names of the Limits fields, as LimitError.Limit reports them.
const (
	limitCompressed = "MaxCompressedBytes"
	limitExpanded   = "MaxExpandedBytes"
	limitFile       = "MaxFileBytes"
	limitHops       = "MaxSymlinkHops"
	limitEntries    = "MaxEntries"
)

// LimitError reports that a scan hit one of its Limits. Limit names the
// Limits field so a command can point at its own flag for it.
type LimitError struct {
	// Limit is the Limits field that was exceeded, e.g. "MaxExpandedBytes".
	Limit string
	// Max is the limit's value.
	Max int64
	// Layer names the layer being read ("layer 3/7 sha256:…"), if any.
	Layer string
	// Path and Size describe the file, for MaxFileBytes.
	Path string
	Size int64
}

func (e *LimitError) Error() string {
	raise := fmt.Sprintf("raise Limits.%s with imagefs.WithLimits", e.Limit)
	switch e.Limit {
	case limitFile:
		return fmt.Sprintf("wanted file %s is %d bytes, more than Limits.%s (%d); %s if a file this large is expected",
			e.Path, e.Size, e.Limit, e.Max, raise)
	case limitExpanded:
		return fmt.Sprintf("%s: the layers expand to more than Limits.%s (%d bytes), which is what a decompression bomb looks like; %s only for an image you trust",
			e.Layer, e.Limit, e.Max, raise)
	case limitCompressed:
		return fmt.Sprintf("%s: reading it takes the scan past Limits.%s (%d bytes of layer data); %s if the wanted files are expected this deep in the image",
			e.Layer, e.Limit, e.Max, raise)
	default:
		return fmt.Sprintf("%s: the scan indexed more than Limits.%s (%d) tar entries; %s if the image is expected to be this large",
			e.Layer, e.Limit, e.Max, raise)
	}
}

// IntegrityError reports a layer whose bytes do not match the digest the
// image manifest names. Nothing from that layer is used.
type IntegrityError struct {
	// Layer names the layer ("layer 3/7").
	Layer string
	// Digest is what the manifest names.
	Digest v1.Hash
	// Got is what the bytes hash to; zero when the stream could not be read
	// to its end.
	Got v1.Hash
	// Err is why the stream could not be read to its end, if it could not.
	Err error
}

func (e *IntegrityError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s %s: digest did not verify: reading its compressed stream to the end failed: %v; nothing from it was used: fetch the image again, after removing any cached copy of the layer",
			e.Layer, e.Digest, e.Err)
	}
	return fmt.Sprintf("%s %s: digest did not verify: its bytes hash to %s; nothing from it was used: the source (registry, OCI layout or cache) holds bytes that do not match the image manifest; remove the bad copy and fetch the image again",
		e.Layer, e.Digest, e.Got)
}

func (e *IntegrityError) Unwrap() error { return e.Err }
