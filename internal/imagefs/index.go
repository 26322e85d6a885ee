package imagefs

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// Whiteout names as the OCI image spec defines them.
const (
	whiteoutPrefix     = ".wh."
	whiteoutMetaPrefix = ".wh..wh."
	opaqueMarker       = ".wh..wh..opq"
)

type kind uint8

const (
	kindDir kind = iota + 1
	kindFile
	kindSymlink
	kindHardlink
	// kindWhiteout is a tombstone: a whiteout deleted the path.
	kindWhiteout
	// kindOther is a device or fifo: it occupies its path but is never a
	// file we can read.
	kindOther
)

// node is the metadata of one path in one layer. Nodes of the same path in
// lower layers hang off lower, newest first, because a hard link resolves its
// target in the view of its own layer, which may differ from the top view.
type node struct {
	lower    *node
	linkname string // symlink target as written; hard-link target as a clean absolute path
	size     int64
	mode     fs.FileMode
	layer    int
	kind     kind
}

func (n *node) regularOrLink() bool {
	return n.kind == kindFile || n.kind == kindSymlink || n.kind == kindHardlink
}

// cutKind says why a path's subtree is hidden from lower layers.
type cutKind uint8

const (
	cutWhiteout cutKind = iota + 1
	cutOpaque
	cutReplaced // a non-directory sits at the path
)

type cut struct {
	layer int
	kind  cutKind
}

// layerIndex collects one layer's entries while it streams. It is merged into
// the scan's index only after the layer's digest verified.
type layerIndex struct {
	layer   int
	entries map[string]*node   // nil when not indexing (a re-read)
	cuts    map[string]cutKind // subtrees this layer hides from lower layers
	room    int                // entries this layer may still add (Limits.MaxEntries)
	maxAll  int
	capture *capture
	toc     []tocEntry // every header, in stream order: the scan index's table of contents
}

func newLayerIndex(layer, room, maxAll int, c *capture, indexing bool) *layerIndex {
	li := &layerIndex{layer: layer, room: room, maxAll: maxAll, capture: c}
	if indexing {
		li.entries = make(map[string]*node)
		li.cuts = make(map[string]cutKind)
	}
	return li
}

// add records one tar entry; body is positioned at its content.
func (li *layerIndex) add(hdr *tar.Header, body io.Reader) error {
	rec := len(li.toc)
	li.toc = append(li.toc, tocOf(hdr))
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		return nil // PAX defaults for later entries, already applied by archive/tar
	}
	name, err := cleanEntryName(hdr.Name)
	if err != nil {
		return fmt.Errorf("%w %q: its name climbs above the image root; refusing the image", ErrUnsafeEntry, hdr.Name)
	}
	if name == "/" {
		return nil // the root is always a directory
	}
	if base := path.Base(name); strings.HasPrefix(base, whiteoutPrefix) {
		return li.addWhiteout(name, base)
	}
	n, err := newNode(li.layer, hdr)
	if err != nil {
		return err
	}
	if err := li.put(name, n); err != nil {
		return err
	}
	return li.capture.observe(name, n, body, rec)
}

func newNode(layer int, hdr *tar.Header) (*node, error) {
	n := &node{layer: layer, mode: hdr.FileInfo().Mode()}
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeGNUSparse:
		n.kind, n.size = kindFile, hdr.Size
	case tar.TypeDir:
		n.kind = kindDir
	case tar.TypeSymlink:
		n.kind, n.linkname = kindSymlink, hdr.Linkname
	case tar.TypeLink:
		target, err := cleanEntryName(hdr.Linkname)
		if err != nil || target == "/" {
			return nil, fmt.Errorf("%w %q: hard link to %q, which climbs above the image root or names the root; refusing the image",
				ErrUnsafeEntry, hdr.Name, hdr.Linkname)
		}
		n.kind, n.linkname = kindHardlink, target
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		n.kind = kindOther
	default:
		// Container runtimes refuse unknown entry types when they apply a
		// layer, so an image holding one could not run: refuse it here too.
		return nil, fmt.Errorf("tar entry %q has type %q, which container runtimes cannot apply; refusing the image", hdr.Name, hdr.Typeflag)
	}
	return n, nil
}

// cleanEntryName maps a tar entry name to a clean absolute path. The forms
// "./a", "a" and "/a" name the same path; a name whose ".." climbs above the
// root is an error rather than clamped, because clamping would silently put
// the entry somewhere its author did not write it.
func cleanEntryName(name string) (string, error) {
	rel := strings.TrimLeft(name, "/")
	if rel == "" {
		return "/", nil
	}
	c := path.Clean(rel)
	switch {
	case c == "..", strings.HasPrefix(c, "../"):
		return "", ErrUnsafeEntry
	case c == ".":
		return "/", nil
	}
	return "/" + c, nil
}

func (li *layerIndex) addWhiteout(name, base string) error {
	if li.entries == nil {
		return nil
	}
	dir := path.Dir(name)
	switch {
	case base == opaqueMarker:
		if err := li.imply(name); err != nil {
			return err
		}
		li.cut(dir, cutOpaque)
		return nil
	case strings.HasPrefix(base, whiteoutMetaPrefix):
		return nil // other aufs bookkeeping (.wh..wh.plnk, ...): no meaning in OCI layers
	}
	victim := base[len(whiteoutPrefix):]
	if victim == "." || victim == ".." || victim == "" {
		return fmt.Errorf("whiteout entry %q names no file; refusing the image", name)
	}
	p := path.Join(dir, victim)
	if err := li.imply(p); err != nil {
		return err
	}
	li.cut(p, cutWhiteout)
	// A whiteout only hides lower layers: an entry of this layer at the same
	// path stays, whichever comes first in the stream.
	if li.entries[p] == nil {
		return li.insert(p, &node{layer: li.layer, kind: kindWhiteout})
	}
	return nil
}

// put records a real entry, replacing an earlier one of the same kind class
// (tar append semantics: the last one wins).
func (li *layerIndex) put(p string, n *node) error {
	if li.entries == nil {
		return nil
	}
	if err := li.imply(p); err != nil {
		return err
	}
	if n.kind != kindDir {
		li.cut(p, cutReplaced)
	}
	old := li.entries[p]
	if old == nil {
		return li.insert(p, n)
	}
	if old.kind != kindWhiteout && (old.kind == kindDir) != (n.kind == kindDir) {
		return fmt.Errorf("tar entry %q: the layer holds the path both as a directory and as a non-directory; refusing an ambiguous layer", p)
	}
	li.entries[p] = n
	return nil
}

// imply records the parent directories of p that the layer does not list
// itself, as extraction would create them. A parent that is a non-directory
// in the same layer makes the layer ambiguous.
func (li *layerIndex) imply(p string) error {
	for a := path.Dir(p); a != "/"; a = path.Dir(a) {
		switch e := li.entries[a]; {
		case e == nil:
			if err := li.insert(a, &node{layer: li.layer, kind: kindDir, mode: fs.ModeDir | 0o755}); err != nil {
				return err
			}
		case e.kind == kindDir:
			return nil // its own parents were implied when it was added
		case e.kind == kindWhiteout:
			li.entries[a] = &node{layer: li.layer, kind: kindDir, mode: fs.ModeDir | 0o755}
		default:
			return fmt.Errorf("tar entry %q: its parent %s is a non-directory in the same layer; refusing an ambiguous layer", p, a)
		}
	}
	return nil
}

func (li *layerIndex) insert(p string, n *node) error {
	if li.room <= 0 {
		return &LimitError{Limit: limitEntries, Max: int64(li.maxAll)}
	}
	li.room--
	li.entries[p] = n
	return nil
}

func (li *layerIndex) cut(p string, k cutKind) {
	if _, ok := li.cuts[p]; !ok {
		li.cuts[p] = k
	}
}

// presence is what the layers read so far say about a path.
type presence uint8

const (
	// unknown: no layer read has the path and nothing read hides it, so an
	// unread layer may still supply it.
	unknown presence = iota
	present
	absent
)

// index is the merged view of the verified layers read so far.
type index struct {
	nodes  map[string]*node // newest first per path
	cuts   map[string][]cut // newest first per path
	total  int              // layers in the image
	lowest int              // lowest layer read; total when none
	count  int              // entries indexed, for Limits.MaxEntries
}

func newIndex(total int) *index {
	return &index{nodes: make(map[string]*node), cuts: make(map[string][]cut), total: total, lowest: total}
}

// commit merges a verified layer below everything already merged.
func (x *index) commit(li *layerIndex) {
	for p, n := range li.entries {
		head := x.nodes[p]
		if head == nil {
			x.nodes[p] = n
			continue
		}
		for head.lower != nil {
			head = head.lower
		}
		head.lower = n
	}
	for p, k := range li.cuts {
		x.cuts[p] = append(x.cuts[p], cut{layer: li.layer, kind: k})
	}
	x.count += len(li.entries)
	x.lowest = li.layer
}

// lookup answers what p is in the merged view of layers 0..top. For absent
// paths why says what hid them ("" when simply not in any layer).
func (x *index) lookup(p string, top int) (n *node, st presence, why string) {
	for e := x.nodes[p]; e != nil; e = e.lower {
		if e.layer <= top {
			n = e
			break
		}
	}
	floor := -1
	if n != nil {
		floor = n.layer
	}
	// A cut at an ancestor in a layer above n (or anywhere, without n) hides
	// p from n down, including every layer not read yet.
	for a := path.Dir(p); ; a = path.Dir(a) {
		for _, c := range x.cuts[a] {
			if c.layer > floor && c.layer <= top {
				return nil, absent, x.hiddenBy(a, c)
			}
		}
		if a == "/" {
			break
		}
	}
	switch {
	case n == nil && x.lowest == 0:
		return nil, absent, ""
	case n == nil:
		return nil, unknown, ""
	case n.kind == kindWhiteout:
		return nil, absent, fmt.Sprintf("deleted by a whiteout in layer %d/%d", n.layer+1, x.total)
	}
	return n, present, ""
}

func (x *index) hiddenBy(a string, c cut) string {
	where := fmt.Sprintf("in layer %d/%d", c.layer+1, x.total)
	switch c.kind {
	case cutWhiteout:
		return fmt.Sprintf("hidden by the whiteout of %s %s", a, where)
	case cutOpaque:
		return fmt.Sprintf("hidden by the opaque directory %s %s", a, where)
	default:
		return fmt.Sprintf("hidden because %s is not a directory %s", a, where)
	}
}

// sealed reports whether a layer already read replaced dir or one of its
// ancestors, so no unread layer can add entries below dir.
func (x *index) sealed(dir string) bool {
	for a := dir; ; a = path.Dir(a) {
		if len(x.cuts[a]) > 0 {
			return true
		}
		if a == "/" {
			return false
		}
	}
}

// files lists the base names of the regular files and links directly in dir
// in the top view. It walks the whole index; listings are rare and few.
func (x *index) files(dir string) []string {
	names := []string{}
	for p := range x.nodes {
		if p == dir || path.Dir(p) != dir {
			continue
		}
		if n, st, _ := x.lookup(p, x.total-1); st == present && n.regularOrLink() {
			names = append(names, path.Base(p))
		}
	}
	slices.Sort(names)
	return names
}
