package imagefs

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

type wantState struct {
	Want
	settled bool
	missing bool
	reason  string // why missing
	// frontier is where a pending want expects its file; see outcome.
	frontier string
}

// deferred is content to fetch by re-reading a layer: path in the layer →
// the files waiting for it.
type deferred map[string][]*File

type scanner struct {
	ctx      context.Context
	layers   []v1.Layer
	digests  []v1.Hash // filled for layers as they are read
	lim      Limits
	progress io.Writer
	wants    []*wantState
	idx      *index
	stats    Stats
	files    map[string]*File
	rereads  map[int]deferred
	// charged is what the merged passes cost against the limits: bytes
	// read, or for a layer served from its scan index the bytes reading it
	// would take, so a scan's verdict never depends on the cache.
	charged  struct{ compressed, expanded int64 }
	parallel int // WithParallelism; <= 0 for GOMAXPROCS
	// hasIndex is which layers had a stored scan index when the scan
	// began (indexedBefore).
	hasIndex []bool
}

func newScanner(ctx context.Context, layers []v1.Layer, wants []*wantState, lim Limits, progress io.Writer) *scanner {
	return &scanner{
		ctx:      ctx,
		layers:   layers,
		digests:  make([]v1.Hash, len(layers)),
		lim:      lim,
		progress: progress,
		wants:    wants,
		idx:      newIndex(len(layers)),
		stats:    Stats{LayersTotal: len(layers)},
		files:    make(map[string]*File),
		rereads:  make(map[int]deferred),
	}
}

// run reads layers newest first until every want is settled, then fetches
// content it could not buffer on the way. Layers below the one being merged
// are read ahead concurrently (see passes); their results are merged one by
// one, top-down, exactly as a sequential scan would merge them, and what a
// read-ahead pass found below the layer that settled the last want is
// dropped unseen.
func (s *scanner) run() error {
	// Settling before any layer is read seeds each want's frontier, and
	// settles everything at once for an image without layers.
	if err := s.settle(nil); err != nil {
		return err
	}
	s.indexedBefore()
	ctx, cancel := context.WithCancel(s.ctx)
	var wg sync.WaitGroup
	// Read-ahead passes stop at the cancel and are waited for, so no
	// goroutine or open layer stream outlives the scan.
	defer wg.Wait()
	defer cancel()

	ahead := s.parallelism()
	done := make([]chan *pass, len(s.layers))
	next := len(s.layers) - 1 // the next layer to start reading
	// sizes charged by the passes started so far, in layer order: what the
	// declared-size check of the next layer compares against.
	var declared int64
	// start keeps the layer being merged (top) and the ahead-1 below it
	// in flight.
	start := func(top int) {
		for ; next >= 0 && next > top-ahead; next-- {
			i := next
			if i < top && s.hasIndex[top] && !s.hasIndex[i] {
				// Speculation waits for the indexed prefix: a warm scan
				// replays the top layers' indexes and usually settles every
				// want there, so reading an unindexed layer below ahead of
				// them would be a registry request the scan never needed.
				// It starts once the merge reaches a layer without an index.
				break
			}
			ch := make(chan *pass, 1)
			done[i] = ch
			ps, err := s.newPass(i, s.firstReadCapture(i), true, &declared)
			if err != nil {
				// Reported when the merge reaches this layer, like any
				// other failure of it: a layer above may settle everything
				// first.
				ch <- &pass{layer: i, err: err}
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.load(ctx, ps)
				ch <- ps
			}()
		}
	}
	for i := len(s.layers) - 1; i >= 0 && !s.allSettled(); i-- {
		if err := s.ctx.Err(); err != nil {
			return fmt.Errorf("scan stopped before %s: %w", layerPos(i, len(s.layers)), err)
		}
		start(i)
		ps := <-done[i]
		if err := s.charge(ps); err != nil {
			return err
		}
		s.idx.commit(ps.li)
		if err := s.settle(ps.capture); err != nil {
			return err
		}
	}
	cancel()
	s.stats.LayersRead = len(s.layers) - s.idx.lowest
	return s.fetchDeferred()
}

// parallelism is how many layers are read at once: one per CPU Go may use,
// and no more than the memory budget allows at the worst case of one pass
// (its content buffers plus the decompressor's window).
func (s *scanner) parallelism() int {
	n := max(1, runtime.GOMAXPROCS(0))
	if s.parallel > 0 {
		n = s.parallel
	}
	perPass := int64(zstdMaxWindow) + s.captureBudget()
	if m := int(s.lim.MaxParallelBytes / max(perPass, 1)); m < n {
		n = max(1, m)
	}
	return n
}

// newPass prepares reading layer i: its digest, the declared-size check,
// the progress line, and budgets no smaller than what the layers above will
// leave (what they have been charged so far is all that is known).
func (s *scanner) newPass(i int, c *capture, indexing bool, declared *int64) (*pass, error) {
	digest, err := s.digest(i)
	if err != nil {
		return nil, err
	}
	size, sizeErr := s.layers[i].Size()
	if sizeErr == nil && size > s.lim.MaxCompressedBytes-*declared {
		// The manifest already says the layer does not fit: fail before
		// fetching any of it.
		return nil, &LimitError{Limit: limitCompressed, Max: s.lim.MaxCompressedBytes, Layer: s.layerName(i)}
	}
	if sizeErr == nil {
		*declared += size
	}
	s.logLayer(i, indexing, size, sizeErr)
	return &pass{
		layer: i, digest: digest, name: s.layerName(i), indexing: indexing, capture: c,
		roomCompressed: s.lim.MaxCompressedBytes - s.charged.compressed,
		roomExpanded:   s.lim.MaxExpandedBytes - s.charged.expanded,
		roomEntries:    s.lim.MaxEntries - s.idx.count,
	}, nil
}

// charge adds a finished pass to the scan's budgets, in layer order. A pass
// that started before the layers above it were charged ran with more room
// than was left; when it failed or went over, it is read again with the
// exact room, so the error reported is the one a sequential scan reports,
// on every run.
func (s *scanner) charge(ps *pass) error {
	exact := ps.roomCompressed == s.lim.MaxCompressedBytes-s.charged.compressed &&
		ps.roomExpanded == s.lim.MaxExpandedBytes-s.charged.expanded &&
		ps.roomEntries == s.lim.MaxEntries-s.idx.count
	over := s.charged.compressed+ps.compressed > s.lim.MaxCompressedBytes ||
		s.charged.expanded+ps.expanded > s.lim.MaxExpandedBytes
	if ps.li != nil && s.idx.count+len(ps.li.entries) > s.lim.MaxEntries {
		over = true
	}
	if ps.digest.Algorithm != "" && !exact && (ps.err != nil || over) {
		again := *ps
		again.roomCompressed = s.lim.MaxCompressedBytes - s.charged.compressed
		again.roomExpanded = s.lim.MaxExpandedBytes - s.charged.expanded
		again.roomEntries = s.lim.MaxEntries - s.idx.count
		again.capture = ps.capture.fresh()
		again.li, again.err, again.compressed, again.expanded, again.fromIndex = nil, nil, 0, 0, false
		s.load(s.ctx, &again)
		*ps = again
	}
	if ps.err != nil {
		return ps.err
	}
	s.charged.compressed += ps.compressed
	s.charged.expanded += ps.expanded
	if !ps.fromIndex {
		s.stats.CompressedBytes += ps.compressed
		s.stats.ExpandedBytes += ps.expanded
	} else if ps.indexing {
		s.stats.IndexedLayers++
	}
	if ps.rebuilt {
		s.stats.IndexesRebuilt++
	}
	return nil
}

func (s *scanner) allSettled() bool {
	for _, w := range s.wants {
		if !w.settled {
			return false
		}
	}
	return true
}

// settle resolves every unsettled want against the layers read so far; c
// holds the content buffered from the layer just read.
func (s *scanner) settle(c *capture) error {
	for _, w := range s.wants {
		if w.settled {
			continue
		}
		out, err := s.resolve(w.Path, false)
		if err != nil {
			return err
		}
		switch out.status {
		case statusPending:
			w.frontier = out.frontier
		case statusMissing:
			w.settled, w.missing, w.reason = true, true, out.reason
		case statusFound:
			w.settled = true
			if err := s.found(w, out, c); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *scanner) found(w *wantState, out outcome, c *capture) error {
	n := out.node
	f := &File{Path: w.Path, Resolved: out.path, Size: n.size, Mode: n.mode, Layer: s.digests[n.layer]}
	if w.Content {
		if n.size > s.lim.MaxFileBytes {
			p := w.Path
			if out.path != w.Path {
				p += " (" + out.path + ")"
			}
			return &LimitError{Limit: limitFile, Max: s.lim.MaxFileBytes, Path: p, Size: n.size}
		}
		if data, ok := c.take(n.layer, out.dataPath); ok {
			f.Data = data
		} else {
			s.deferContent(n.layer, out.dataPath, f)
		}
	}
	s.files[w.Path] = f
	return nil
}

func (s *scanner) deferContent(layer int, p string, f *File) {
	d := s.rereads[layer]
	if d == nil {
		d = make(deferred)
		s.rereads[layer] = d
	}
	d[p] = append(d[p], f)
}

// fetchDeferred re-reads, newest first, each layer holding wanted content
// that was not buffered on its first read. The re-read is verified like the
// first one, so a source changing its bytes between reads cannot slip in.
func (s *scanner) fetchDeferred() error {
	for _, layer := range slices.SortedFunc(maps.Keys(s.rereads), func(a, b int) int { return cmp.Compare(b, a) }) {
		want := s.rereads[layer]
		paths := slices.Sorted(maps.Keys(want))
		c := s.rereadCapture(layer, paths)
		declared := s.charged.compressed
		ps, err := s.newPass(layer, c, false, &declared)
		if err != nil {
			return err
		}
		s.load(s.ctx, ps)
		if err := s.charge(ps); err != nil {
			return err
		}
		s.stats.Rereads++
		for _, p := range paths {
			for _, f := range want[p] {
				data, ok := ps.capture.take(layer, p)
				if !ok {
					return fmt.Errorf("%s: %s was a regular file on the first read but is missing on the second; the layer source is not stable", s.layerName(layer), p)
				}
				f.Data = data
			}
		}
	}
	return nil
}

func (s *scanner) result(dirs []string) (*Result, error) {
	res := &Result{Files: s.files, Listings: make(map[string]Listing, len(dirs)), Stats: s.stats}
	for _, d := range dirs {
		l, err := s.listing(d)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", d, err)
		}
		res.Listings[d] = l
	}
	return res, nil
}

// listing reports what dir holds in the merged view of the layers read.
func (s *scanner) listing(dir string) (Listing, error) {
	out, err := s.resolve(dir, true)
	if err != nil {
		return Listing{}, err
	}
	switch out.status {
	case statusMissing:
		// Final: nothing below can bring the directory back.
		return Listing{Entries: []string{}, Complete: true}, nil
	case statusPending:
		return Listing{Entries: s.idx.files(out.frontier), Complete: false}, nil
	}
	return Listing{Entries: s.idx.files(out.path), Complete: s.idx.lowest == 0 || s.idx.sealed(out.path)}, nil
}

func (s *scanner) missing() *MissingError {
	var m *MissingError
	for _, w := range s.wants {
		if !w.missing {
			continue
		}
		if m == nil {
			m = &MissingError{Reasons: make(map[string]string), LayersRead: s.stats.LayersRead, LayersTotal: len(s.layers)}
		}
		m.Paths = append(m.Paths, w.Path)
		if w.reason != "" {
			m.Reasons[w.Path] = w.reason
		}
	}
	return m
}
