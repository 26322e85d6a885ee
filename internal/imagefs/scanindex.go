package imagefs

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// IndexedLayer is a layer whose source keeps scan indexes: what one read of
// the layer learned (its tar table of contents and the content of the small
// files scans asked for), so a later scan merges the layer without reading
// a byte of it. imagesource's blob cache provides it. The source only stores
// bytes under (layer digest, version); this package owns the format and
// never trusts what it reads back: an index that does not decode, does not
// name this layer's digest and this version, or fails its checksum is
// ignored and rebuilt from a verified read of the layer.
type IndexedLayer interface {
	v1.Layer
	// ScanIndex returns the stored index of this layer for version, nil
	// (and no error) when there is none.
	ScanIndex(version string) ([]byte, error)
	// StoreScanIndex replaces the stored index atomically: a reader sees a
	// whole old or a whole new index, never a torn one.
	StoreScanIndex(version string, data []byte) error
}

// IndexVersion is the scan index format's version, part of the key an index
// is stored under: a format change makes every old index a miss.
const IndexVersion = "imagefs-scan-index-v1"

var indexMagic = []byte("tcpxogen scan index\x00")

// tocEntry is one tar header as the scan uses it. The name is kept as
// written, so replaying an index goes through the same cleaning, whiteout
// and refusal logic as reading the layer.
type tocEntry struct {
	name, linkname string
	typeflag       byte
	mode, size     int64
}

func tocOf(h *tar.Header) tocEntry {
	return tocEntry{name: h.Name, linkname: h.Linkname, typeflag: h.Typeflag, mode: h.Mode, size: h.Size}
}

func (e tocEntry) header() *tar.Header {
	return &tar.Header{Name: e.name, Linkname: e.linkname, Typeflag: e.typeflag, Mode: e.mode, Size: e.size}
}

// scanIndex is one layer's index: built only from a read that verified.
type scanIndex struct {
	digest               v1.Hash
	compressed, expanded int64
	toc                  []tocEntry
	content              map[int][]byte // by position in toc
}

// errNotIndexed is what replaying an index yields when the scan needs the
// content of a file the index does not hold: the layer must be read.
var errNotIndexed = errors.New("file content not in the scan index")

type unindexed struct{}

func (unindexed) Read([]byte) (int, error) { return 0, errNotIndexed }

// load fills ps from the layer's scan index when it has one that answers
// everything ps needs, and otherwise reads the layer and, once it verified,
// stores a new index (keeping the old one's content when both tables of
// contents agree; an old index that disagrees with the verified layer is
// replaced).
// indexedBefore records which layers had a stored scan index (of this
// version) when the scan began; whether one replays is decided when it is
// loaded. Taken before any pass runs, so the indexes this scan's own passes
// write do not change its read-ahead from one run to the next.
func (s *scanner) indexedBefore() {
	s.hasIndex = make([]bool, len(s.layers))
	for i, l := range s.layers {
		if il, ok := l.(IndexedLayer); ok {
			data, err := il.ScanIndex(IndexVersion)
			s.hasIndex[i] = err == nil && data != nil
		}
	}
}

func (s *scanner) load(ctx context.Context, ps *pass) {
	il, ok := s.layers[ps.layer].(IndexedLayer)
	if !ok {
		s.readLayer(ctx, ps)
		return
	}
	var old *scanIndex
	if data, err := il.ScanIndex(IndexVersion); err == nil && data != nil {
		if x, err := decodeIndex(data, ps.digest); err == nil {
			old = x
			if s.replay(ps, x) {
				return
			}
		} else {
			ps.rebuilt = true
		}
	}
	s.readLayer(ctx, ps)
	if ps.err != nil {
		return
	}
	x := &scanIndex{digest: ps.digest, compressed: ps.compressed, expanded: ps.expanded, toc: ps.li.toc, content: ps.capture.byRecord()}
	if old != nil {
		if old.compressed == x.compressed && old.expanded == x.expanded && slices.Equal(old.toc, x.toc) {
			for k, v := range old.content {
				if _, ok := x.content[k]; !ok {
					x.content[k] = v
				}
			}
		} else {
			ps.rebuilt = true
		}
	}
	if err := il.StoreScanIndex(IndexVersion, x.encode()); err != nil {
		ps.err, ps.li = fmt.Errorf("%s: storing its scan index: %w", ps.name, err), nil
	}
}

// replay merges the layer from its index through the same code a read
// takes. It reports false, leaving ps as it found it, when the pass needs
// content the index does not hold or the index does not replay cleanly.
func (s *scanner) replay(ps *pass, x *scanIndex) bool {
	if x.compressed > ps.roomCompressed || x.expanded > ps.roomExpanded {
		return false // the read reports the limit, as it would without an index
	}
	li := newLayerIndex(ps.layer, ps.roomEntries, s.lim.MaxEntries, ps.capture, ps.indexing)
	for k, e := range x.toc {
		var body io.Reader = unindexed{}
		if d, ok := x.content[k]; ok {
			body = bytes.NewReader(d)
		}
		if err := li.add(e.header(), body); err != nil {
			ps.capture.reset()
			return false
		}
	}
	ps.li, ps.compressed, ps.expanded, ps.fromIndex = li, x.compressed, x.expanded, true
	return true
}

func (x *scanIndex) encode() []byte {
	var b []byte
	str := func(s string) { b = binary.AppendUvarint(b, uint64(len(s))); b = append(b, s...) }
	b = append(b, indexMagic...)
	str(IndexVersion)
	str(x.digest.String())
	b = binary.AppendVarint(b, x.compressed)
	b = binary.AppendVarint(b, x.expanded)
	b = binary.AppendUvarint(b, uint64(len(x.toc)))
	for _, e := range x.toc {
		str(e.name)
		str(e.linkname)
		b = append(b, e.typeflag)
		b = binary.AppendVarint(b, e.mode)
		b = binary.AppendVarint(b, e.size)
	}
	keys := slices.Sorted(maps.Keys(x.content))
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = binary.AppendUvarint(b, uint64(k))
		str(string(x.content[k]))
	}
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

// decodeIndex parses an index and refuses anything but a whole, intact
// index of this format version for the layer digest.
func decodeIndex(data []byte, digest v1.Hash) (*scanIndex, error) {
	if len(data) < len(indexMagic)+sha256.Size {
		return nil, errors.New("scan index is truncated")
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, errors.New("scan index fails its checksum: truncated, corrupt or half-written")
	}
	if !bytes.HasPrefix(body, indexMagic) {
		return nil, errors.New("not a scan index")
	}
	d := decoder{b: body[len(indexMagic):]}
	if v := d.str(); v != IndexVersion {
		return nil, fmt.Errorf("scan index has format %q, not %q", v, IndexVersion)
	}
	if got := d.str(); got != digest.String() {
		return nil, fmt.Errorf("scan index is of layer %s, not %s", got, digest)
	}
	x := &scanIndex{digest: digest, compressed: d.varint(), expanded: d.varint(), content: map[int][]byte{}}
	n := d.count(1 + 1 + 1 + 1 + 1)
	x.toc = make([]tocEntry, 0, n)
	for range n {
		e := tocEntry{name: d.str(), linkname: d.str(), typeflag: d.byte()}
		e.mode, e.size = d.varint(), d.varint()
		x.toc = append(x.toc, e)
	}
	for range d.count(2) {
		k := d.uvarint()
		v := d.str()
		if k >= uint64(len(x.toc)) || d.err != nil {
			return nil, errors.New("scan index content names no entry")
		}
		if int64(len(v)) != x.toc[k].size {
			return nil, errors.New("scan index content does not match its entry's size")
		}
		x.content[int(k)] = []byte(v)
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, errors.New("scan index has trailing bytes")
	}
	return x, nil
}

// decoder reads the index format; the first malformation sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() { d.err, d.b = cmpOr(d.err, errors.New("scan index is malformed")), nil }

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) str() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// count reads a count of items of at least minSize bytes each, refusing one
// the remaining bytes cannot hold (so a corrupt count cannot make us
// allocate).
func (d *decoder) count(minSize int) int {
	n := d.uvarint()
	if n > uint64(len(d.b)/minSize) {
		d.fail()
		return 0
	}
	return int(n)
}
