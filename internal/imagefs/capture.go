package imagefs

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"math"
	"path"
	"slices"
	"strings"
)

// capture buffers the content of the regular files of one layer pass that
// may be wanted. On a first read the candidate paths are a guess (see the
// package documentation); on a re-read they are exact.
type capture struct {
	layer    int
	paths    map[string]bool
	follow   bool // extend paths through symlinks met in the stream
	maxPaths int
	maxFile  int64
	budget   int64 // bytes still bufferable in this pass
	data     map[string][]byte
	taken    map[string]bool
	recOf    map[string]int  // data's position in the stream
	seed     map[string]bool // paths before the stream extended them
	budget0  int64
}

// fresh is c before any stream was seen, for reading its layer again.
func (c *capture) fresh() *capture {
	if c == nil {
		return nil
	}
	d := *c
	d.paths, d.budget = maps.Clone(c.seed), c.budget0
	d.data, d.taken, d.recOf = make(map[string][]byte), make(map[string]bool), make(map[string]int)
	return &d
}

// reset returns c to its state before any stream was seen.
func (c *capture) reset() {
	if c != nil {
		*c = *c.fresh()
	}
}

// byRecord is the buffered content by position in the layer's stream, as
// the scan index keeps it.
func (c *capture) byRecord() map[int][]byte {
	out := map[int][]byte{}
	if c == nil {
		return out
	}
	for name, d := range c.data {
		out[c.recOf[name]] = d
	}
	return out
}

// seal records the starting state fresh returns to.
func (c *capture) seal() *capture {
	if c != nil {
		c.seed, c.budget0 = maps.Clone(c.paths), c.budget
		c.recOf = make(map[string]int)
	}
	return c
}

// firstReadCapture guesses which files of layer could answer the unresolved
// content wants: the path each is waiting for. nil when no want needs content.
func (s *scanner) firstReadCapture(layer int) *capture {
	c := &capture{layer: layer, paths: make(map[string]bool), follow: true, maxFile: s.lim.MaxFileBytes}
	n := 0
	for _, w := range s.wants {
		if !w.settled && w.Content {
			c.paths[w.frontier] = true
			n++
		}
	}
	if n == 0 {
		return nil
	}
	c.maxPaths = n * (s.lim.MaxSymlinkHops + 1)
	c.budget = math.MaxInt64
	if s.lim.MaxFileBytes < math.MaxInt64/int64(n) {
		c.budget = int64(n) * s.lim.MaxFileBytes
	}
	c.data = make(map[string][]byte)
	c.taken = make(map[string]bool)
	return c.seal()
}

// captureBudget is what one first-read pass may buffer at most.
func (s *scanner) captureBudget() int64 {
	n := int64(0)
	for _, w := range s.wants {
		if w.Content {
			n++
		}
	}
	if n > 0 && s.lim.MaxFileBytes >= math.MaxInt64/n {
		return math.MaxInt64 / 2
	}
	return n * s.lim.MaxFileBytes
}

// rereadCapture takes exactly paths from layer.
func (s *scanner) rereadCapture(layer int, paths []string) *capture {
	c := &capture{layer: layer, paths: make(map[string]bool, len(paths)), maxFile: s.lim.MaxFileBytes,
		budget: math.MaxInt64, data: make(map[string][]byte), taken: make(map[string]bool)}
	for _, p := range paths {
		c.paths[p] = true
	}
	return c.seal()
}

// observe sees one entry of the stream, body positioned at its content.
func (c *capture) observe(name string, n *node, body io.Reader, rec int) error {
	if c == nil {
		return nil
	}
	if old, ok := c.data[name]; ok { // the stream replaces an earlier entry
		c.budget += int64(len(old))
		delete(c.data, name)
	}
	switch n.kind {
	case kindSymlink:
		if c.follow {
			c.extend(name, n.linkname)
		}
	case kindFile:
		if !c.paths[name] || n.size > c.maxFile || n.size > c.budget {
			return nil
		}
		buf := make([]byte, n.size)
		if _, err := io.ReadFull(body, buf); err != nil {
			return fmt.Errorf("reading %s: %w", name, err)
		}
		c.data[name] = buf
		c.recOf[name] = rec
		c.budget -= n.size
	}
	return nil
}

// extend adds, for each candidate at or below link, the path it has through
// the link's target. Lexical resolution is enough for a guess: the merged
// view decides what is actually used.
func (c *capture) extend(link, target string) {
	if target == "" {
		return
	}
	dest := target
	if !path.IsAbs(target) {
		dest = path.Join(path.Dir(link), target)
	}
	dest = path.Clean("/" + dest) // ".." stops at the image root
	for _, p := range slices.Sorted(maps.Keys(c.paths)) {
		if len(c.paths) >= c.maxPaths {
			return
		}
		switch {
		case p == link:
			c.paths[dest] = true
		case strings.HasPrefix(p, link+"/"):
			c.paths[path.Join(dest, p[len(link):])] = true
		}
	}
}

// take hands out the buffered content of p in layer. A second taker of the
// same file gets its own copy so Files never share a mutable buffer.
func (c *capture) take(layer int, p string) ([]byte, bool) {
	if c == nil || c.layer != layer {
		return nil, false
	}
	d, ok := c.data[p]
	if !ok {
		return nil, false
	}
	if c.taken[p] {
		return bytes.Clone(d), true
	}
	c.taken[p] = true
	return d, true
}
