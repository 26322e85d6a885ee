package imagefs

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"

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
// content it could not buffer on the way.
func (s *scanner) run() error {
	// Settling before any layer is read seeds each want's frontier, and
	// settles everything at once for an image without layers.
	if err := s.settle(nil); err != nil {
		return err
	}
	for i := len(s.layers) - 1; i >= 0 && !s.allSettled(); i-- {
		if err := s.ctx.Err(); err != nil {
			return fmt.Errorf("scan stopped before %s: %w", layerPos(i, len(s.layers)), err)
		}
		c := s.firstReadCapture(i)
		li, err := s.readLayer(i, c, true)
		if err != nil {
			return err
		}
		s.idx.commit(li)
		if err := s.settle(c); err != nil {
			return err
		}
	}
	s.stats.LayersRead = len(s.layers) - s.idx.lowest
	return s.fetchDeferred()
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
		if _, err := s.readLayer(layer, c, false); err != nil {
			return err
		}
		s.stats.Rereads++
		for _, p := range paths {
			for _, f := range want[p] {
				data, ok := c.take(layer, p)
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
