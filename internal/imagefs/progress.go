package imagefs

import (
	"fmt"
)

// logLayer announces a layer pass before it starts, so a slow fetch shows
// which layer it is stuck on.
func (s *scanner) logLayer(i int, firstRead bool, size int64, sizeErr error) {
	if s.progress == nil {
		return
	}
	verb := "reading"
	if !firstRead {
		verb = "re-reading"
	}
	sz := "size unknown"
	if sizeErr == nil {
		sz = humanBytes(size)
	}
	s.logf("%s %s %s %s", verb, layerPos(i, len(s.layers)), shortDigest(s.digests[i].String()), sz)
}

func (s *scanner) logSummary() {
	if s.progress == nil {
		return
	}
	again := ""
	if s.stats.Rereads > 0 {
		again = fmt.Sprintf(" (%d re-read)", s.stats.Rereads)
	}
	s.logf("read %d of %d layers%s: %s fetched, %s expanded",
		s.stats.LayersRead, s.stats.LayersTotal, again, humanBytes(s.stats.CompressedBytes), humanBytes(s.stats.ExpandedBytes))
}

// logf writes one progress line. Write errors are ignored: progress is a
// courtesy, and a closed terminal must not fail an extraction.
func (s *scanner) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(s.progress, format+"\n", args...)
}

// shortDigest keeps the algorithm and 12 hex digits, enough to tell layers
// apart on a progress line.
func shortDigest(d string) string {
	const keep = len("sha256:") + 12
	if len(d) <= keep {
		return d
	}
	return d[:keep] + "…"
}

// humanBytes formats n in SI units with one decimal, like "1.2 MB".
func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}
