package imagefs

import (
	"fmt"
	"path"
	"strings"
)

type status uint8

const (
	// statusPending: resolution needs a path no layer read so far settles.
	statusPending status = iota
	statusFound
	statusMissing
)

// outcome is where resolving one path got to with the layers read so far.
// Found and missing are final: lower layers cannot change them, because the
// newest visible entry of a path wins and hidden paths stay hidden.
type outcome struct {
	status status
	// found: the resolved path, and for files the node supplying content
	// and its path in that node's layer (differs from path for hard links).
	path     string
	node     *node
	dataPath string
	// pending: where the file would be if the rest of the path holds no
	// more links; a hint for what to buffer, never trusted for results.
	frontier string
	// missing: why, "" when the path is simply in no layer.
	reason string
}

// resolver resolves one path inside the image root: absolute link targets
// start at the image root and ".." stops there, so nothing resolves to the
// host's filesystem, which is never touched anyway.
type resolver struct {
	x       *index
	want    string
	maxHops int
	hops    int
	chain   []string        // "link -> target" per symlink followed, for errors
	seen    map[string]bool // symlink and remaining path already followed
}

func (s *scanner) resolve(p string, wantDir bool) (outcome, error) {
	r := &resolver{x: s.idx, want: p, maxHops: s.lim.MaxSymlinkHops, seen: make(map[string]bool)}
	return r.run(wantDir)
}

func (r *resolver) run(wantDir bool) (outcome, error) {
	top := r.x.total - 1
	cur, rest := "/", splitPath(r.want)
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case ".":
			continue
		case "..":
			cur = path.Dir(cur) // cur holds no links, so its parent is real
			continue
		}
		p := path.Join(cur, name)
		n, st, why := r.x.lookup(p, top)
		switch st {
		case unknown:
			return outcome{status: statusPending, frontier: path.Join(p, strings.Join(rest, "/"))}, nil
		case absent:
			return r.missing(p, why), nil
		}
		n, dataPath, pending, err := r.hardlink(p, n)
		if err != nil || pending != nil {
			return derefOutcome(pending), err
		}
		switch n.kind {
		case kindDir:
			cur = p
		case kindSymlink:
			if n.linkname == "" {
				return r.missing(p, "symlink "+p+" has an empty target"), nil
			}
			if rest, err = r.follow(p, n.linkname, rest); err != nil {
				return outcome{}, err
			}
			if path.IsAbs(n.linkname) {
				cur = "/"
			}
		case kindFile:
			if len(rest) > 0 {
				return r.missing(p, p+" is a file, not a directory"), nil
			}
			if wantDir {
				return r.missing(p, p+" is a file, not a directory"), nil
			}
			return outcome{status: statusFound, path: p, node: n, dataPath: dataPath}, nil
		default:
			return r.missing(p, p+" is not a regular file"), nil
		}
	}
	if wantDir {
		return outcome{status: statusFound, path: cur}, nil
	}
	return r.missing(cur, cur+" is a directory"), nil
}

func derefOutcome(o *outcome) outcome {
	if o == nil {
		return outcome{}
	}
	return *o
}

// follow counts one symlink hop and returns the components still to walk.
func (r *resolver) follow(link, target string, rest []string) ([]string, error) {
	r.hops++
	r.chain = append(r.chain, link+" -> "+target)
	key := link + "\x00" + strings.Join(rest, "/")
	if r.seen[key] {
		return nil, fmt.Errorf("symlink loop resolving %s: %s", r.want, strings.Join(r.chain, ", "))
	}
	if r.hops > r.maxHops {
		return nil, fmt.Errorf("resolving %s followed more than %d links (Limits.%s): %s",
			r.want, r.maxHops, limitHops, strings.Join(r.chain, ", "))
	}
	r.seen[key] = true
	return append(splitPath(target), rest...), nil
}

// hardlink follows hard links at p to the entry they name. A hard link's
// target is the literal path of an entry in its own layer or below (what
// extraction would link to), so it is looked up in that layer's view, not the
// top one: a newer layer replacing the target does not change the link.
func (r *resolver) hardlink(p string, n *node) (*node, string, *outcome, error) {
	dataPath := p
	for n.kind == kindHardlink {
		r.hops++
		r.chain = append(r.chain, p+" => "+n.linkname)
		if r.hops > r.maxHops {
			return nil, "", nil, fmt.Errorf("resolving %s followed more than %d links (Limits.%s): %s",
				r.want, r.maxHops, limitHops, strings.Join(r.chain, ", "))
		}
		t, st, _ := r.x.lookup(n.linkname, n.layer)
		switch st {
		case unknown:
			return nil, "", &outcome{status: statusPending, frontier: n.linkname}, nil
		case absent:
			return nil, "", nil, fmt.Errorf("hard link %s in layer %d/%d names %s, which that layer and those below it do not hold; the image is corrupt",
				dataPath, n.layer+1, r.x.total, n.linkname)
		}
		n, dataPath = t, n.linkname
	}
	return n, dataPath, nil, nil
}

func (r *resolver) missing(p, why string) outcome {
	if why != "" && p != r.want && !strings.Contains(why, p) {
		why = p + ": " + why
	}
	if why == "" && len(r.chain) > 0 {
		// Only worth saying when links led somewhere the caller did not name.
		why = "its links lead to " + p + ", which is not in the image"
	}
	return outcome{status: statusMissing, reason: why}
}

func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r == '/' })
}
