package imagefs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Limits bound the work and memory of one Scan. A zero field means its
// default; a negative one is an error.
type Limits struct {
	// MaxCompressedBytes bounds the layer-blob bytes one scan may fetch (as
	// compressed on the wire), re-reads included. Default 512 MiB.
	MaxCompressedBytes int64
	// MaxExpandedBytes bounds the uncompressed tar bytes one scan may
	// process; it is what stops a decompression bomb. Default 2 GiB.
	MaxExpandedBytes int64
	// MaxFileBytes is the largest file whose content may be extracted (and
	// the largest one buffered speculatively). Default 4 MiB.
	MaxFileBytes int64
	// MaxSymlinkHops bounds the links followed to resolve one path, as the
	// kernel's ELOOP limit does. Default 40.
	MaxSymlinkHops int
	// MaxEntries bounds how many tar entries one scan may index: metadata of
	// every entry in the layers read is kept for link resolution (see the
	// package documentation). Default 1,000,000.
	MaxEntries int
	// MaxParallelBytes bounds the memory layers read at the same time may
	// hold at worst (content buffers and decompressor windows): layers are
	// read concurrently, one per CPU, only as far as it allows. Default
	// 512 MiB.
	MaxParallelBytes int64
}

// DefaultLimits returns the limits a Scan uses unless told otherwise.
func DefaultLimits() Limits {
	return Limits{
		MaxCompressedBytes: 512 << 20,
		MaxExpandedBytes:   2 << 30,
		MaxFileBytes:       4 << 20,
		MaxSymlinkHops:     40,
		MaxEntries:         1_000_000,
		MaxParallelBytes:   512 << 20,
	}
}

// withDefaults fills zero fields from DefaultLimits and rejects negative ones.
func (l Limits) withDefaults() (Limits, error) {
	d := DefaultLimits()
	var errs []error
	fill := func(name string, v *int64, def int64) {
		switch {
		case *v < 0:
			errs = append(errs, fmt.Errorf("Limits.%s is %d: it must be positive, or 0 for the default (%d)", name, *v, def))
		case *v == 0:
			*v = def
		}
	}
	fill(limitCompressed, &l.MaxCompressedBytes, d.MaxCompressedBytes)
	fill(limitExpanded, &l.MaxExpandedBytes, d.MaxExpandedBytes)
	fill(limitFile, &l.MaxFileBytes, d.MaxFileBytes)
	fill("MaxParallelBytes", &l.MaxParallelBytes, d.MaxParallelBytes)
	hops, entries := int64(l.MaxSymlinkHops), int64(l.MaxEntries)
	fill(limitHops, &hops, int64(d.MaxSymlinkHops))
	fill(limitEntries, &entries, int64(d.MaxEntries))
	l.MaxSymlinkHops, l.MaxEntries = int(hops), int(entries)
	return l, errors.Join(errs...)
}

// Want names one file to find.
type Want struct {
	// Path is the absolute, clean path of the file in the image, e.g.
	// "/scripts/nccl-env-profile.sh". Symlinks along it are followed.
	Path string
	// Content asks for the file's bytes; without it only existence and
	// metadata are reported, and the file may be of any size.
	Content bool
}

// File is a wanted path that resolved to a regular file.
type File struct {
	// Path is the path as requested.
	Path string
	// Resolved is the path after following symlinks (a hard link keeps its
	// own name: it is a second name for the file, not a pointer to another).
	Resolved string
	Size     int64
	Mode     fs.FileMode
	// Data is the file's content; nil unless Want.Content.
	Data []byte
	// Layer is the digest of the layer that supplied the content and
	// metadata (for a hard link, the layer holding its target).
	Layer v1.Hash
}

// Stats describe the work one scan did.
type Stats struct {
	LayersTotal int
	// LayersRead counts distinct layers read.
	LayersRead int
	// Rereads counts extra passes over layers already read (see the package
	// documentation).
	Rereads int
	// CompressedBytes counts bytes fetched from the layer source, re-reads
	// included.
	CompressedBytes int64
	// ExpandedBytes counts uncompressed tar bytes processed.
	ExpandedBytes int64
	// IndexedLayers counts layers served from their scan index (see
	// WithIndexes) without reading a byte of them; they count in
	// LayersRead but not in the byte counts.
	IndexedLayers int
	// IndexesRebuilt counts stored scan indexes that were unusable
	// (truncated, corrupt, another version or layer) or disagreed with the
	// verified layer, and were replaced.
	IndexesRebuilt int
}

// Result is what a Scan found.
type Result struct {
	// Files holds the wants that resolved to regular files, keyed by the
	// requested path.
	Files map[string]*File
	// Listings holds one Listing per WithList directory, keyed by the
	// directory as requested.
	Listings map[string]Listing
	Stats    Stats
}

// Listing is what a WithList directory holds in the merged view of the layers
// read.
type Listing struct {
	// Entries are the sorted base names of the regular files and symlinks
	// directly in the directory (not subdirectories).
	Entries []string
	// Complete reports that no unread layer can add to Entries: every layer
	// was read, or a layer already read replaced the directory (opaque
	// marker, whiteout, or a non-directory at or above it).
	Complete bool
}

// Option configures a Scan.
type Option func(*options)

type options struct {
	limits   Limits
	lists    []string
	progress io.Writer
	parallel int
}

// WithLimits replaces the default limits; zero fields keep their defaults.
func WithLimits(l Limits) Option { return func(o *options) { o.limits = l } }

// WithList also reports the entries of dir (absolute and clean; symlinks
// along it are followed) seen in the layers the wants made the scan read.
// It never makes the scan read further: a directory is only proven complete
// at an opaque marker, a whiteout or a non-directory above it, or at the base
// layer, so ask for explicit files and treat the listing as a hint unless
// Complete.
func WithList(dir string) Option { return func(o *options) { o.lists = append(o.lists, dir) } }

// WithParallelism reads at most n layers at once (n <= 0: one per CPU Go
// may use, GOMAXPROCS). With 1 a scan opens no layer below the one that
// settled its last want; with more it reads that many ahead and drops what
// it did not need: the Result and any error are the same either way.
func WithParallelism(n int) Option { return func(o *options) { o.parallel = n } }

// WithProgress prints one line per layer read, and a summary, to w. Whether
// w is a terminal is the caller's business.
func WithProgress(w io.Writer) Option { return func(o *options) { o.progress = w } }

// Scan finds the wanted files in img, reading layers newest first and
// stopping as soon as every want is resolved.
//
// A want that the image does not have (absent, whited out, not a regular
// file, a dangling link) yields a *MissingError listing every such path; the
// Result is returned alongside it with everything that was found, so callers
// can treat some files as optional. Any other error returns no Result:
// limits (*LimitError), a layer that does not verify (*IntegrityError), an
// entry escaping the image root (ErrUnsafeEntry), a symlink loop, or ctx
// being done.
func Scan(ctx context.Context, img v1.Image, wants []Want, opts ...Option) (*Result, error) {
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	lim, err := o.limits.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("invalid imagefs limits: %w", err)
	}
	ws, err := newWants(wants)
	if err != nil {
		return nil, err
	}
	dirs, err := cleanDirs(o.lists)
	if err != nil {
		return nil, err
	}
	if img == nil {
		return nil, errors.New("imagefs.Scan: no image given")
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("listing the image's layers: %w", err)
	}

	s := newScanner(ctx, layers, ws, lim, o.progress)
	s.parallel = o.parallel
	if err := s.run(); err != nil {
		return nil, err
	}
	res, err := s.result(dirs)
	if err != nil {
		return nil, err
	}
	s.logSummary()
	if missing := s.missing(); missing != nil {
		if d, err := img.Digest(); err == nil {
			missing.Image = d.String()
		}
		return res, missing
	}
	return res, nil
}

// newWants validates wants and merges duplicates (Content if any asks for
// it), sorted by path so scans and their errors are deterministic.
func newWants(wants []Want) ([]*wantState, error) {
	if len(wants) == 0 {
		return nil, errors.New("imagefs.Scan: no files wanted; pass at least one Want (a scan reads only as many layers as its wants need)")
	}
	byPath := make(map[string]*wantState, len(wants))
	for _, w := range wants {
		if !isCleanAbs(w.Path) || w.Path == "/" {
			return nil, fmt.Errorf("want %q: the path must be absolute, clean and not the root, like %q", w.Path, "/scripts/nccl-env-profile.sh")
		}
		if prev, ok := byPath[w.Path]; ok {
			prev.Content = prev.Content || w.Content
			continue
		}
		byPath[w.Path] = &wantState{Want: w}
	}
	out := make([]*wantState, 0, len(byPath))
	for _, w := range byPath {
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b *wantState) int { return cmp.Compare(a.Path, b.Path) })
	return out, nil
}

func cleanDirs(dirs []string) ([]string, error) {
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		if !isCleanAbs(d) {
			return nil, fmt.Errorf("WithList(%q): the directory must be absolute and clean, like %q", d, "/plugins")
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out, nil
}

func isCleanAbs(p string) bool { return path.IsAbs(p) && path.Clean(p) == p }
