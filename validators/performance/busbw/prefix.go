package busbw

import (
	"regexp"
	"strings"
)

// Prefixes launchers and log collectors put in front of a program's lines.
// They nest (kubectl --timestamps around mpirun --tag-output around a Slurm
// label), so stripPrefixes applies them repeatedly.
var (
	// kubectl logs --timestamps, docker logs -t: RFC 3339 with a space after.
	timestampPrefix = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\s`)
	// mpirun --tag-output (OpenMPI): "[1,0]<stdout>:".
	mpiTagPrefix = regexp.MustCompile(`^\[\d+,\d+\]<(?:stdout|stderr|stddiag)>:`)
	// SkyPilot and Ray: "(head, rank=0, pid=21170) ", "(worker1, rank=1,
	// pid=20075, ip=10.164.15.193) ", "(pid=4242) ".
	rayPrefix = regexp.MustCompile(`^\((?:[^()]*[ ,])?pid=\d+[^()]*\)\s?`)
	// kubectl logs --prefix "[pod/NAME/CONTAINER] ", OpenMPI's "[host:pid] ",
	// Python logging's "[2024-01-15 23:37:46,764] ".
	bracketPrefix = regexp.MustCompile(`^\[[^\]]*\]\s?`)
	// "host: text" (pdsh, mpirun --output) and Slurm's srun --label "0: ".
	// NCCL's own "host:pid:tid [dev] NCCL ..." has no space after the first
	// colon and is deliberately left alone.
	hostPrefix = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*:\s+`)
)

var prefixes = []*regexp.Regexp{timestampPrefix, mpiTagPrefix, rayPrefix, bracketPrefix, hostPrefix}

// stripPrefixes removes launcher and collector prefixes (and the indentation
// some collectors add before them) until none is left.
func stripPrefixes(s string) string {
	for range 8 {
		before := s
		for _, re := range prefixes {
			s = strings.TrimLeft(s, " \t")
			if loc := re.FindStringIndex(s); loc != nil {
				s = s[loc[1]:]
			}
		}
		if s == before {
			break
		}
	}
	return s
}

// FormatsHelp lists, for `tcpxogen nccl-report --help`, what Parse reads.
const FormatsHelp = `Log formats read:
  - nccl-tests 2.13 and later: 13 columns (size count type redop root, then
    time algbw busbw #wrong out-of-place and in-place); #wrong as an integer,
    in %g form (1.04858e+06) or N/A (-c 0); the optional timestamp column
    (-S 1) and per-iteration columns (-I 1) of later releases
  - nccl-tests before 2.13: per-collective columns with an "error" column (the
    largest deviation, not a count; the "Out of bounds values" trailer counts)
  - rows of size 0 (-b 0 or -b 1), repeated cycles (-N), comment lines whose
    leading '#' a collector stripped
Line prefixes stripped (nested, with any indentation):
  - kubectl logs --timestamps / docker logs -t (RFC 3339)
  - kubectl logs --prefix "[pod/NAME/CONTAINER] "
  - mpirun --tag-output "[1,0]<stdout>:"
  - SkyPilot / Ray "(head, rank=0, pid=123) "
  - srun --label "0: ", pdsh "host: "
The collective comes from "# Collective test starting:", the benchmark's name
(all_gather_perf, ...) or the table's shape; nodes and ranks from the
"#  Rank N ... on HOST device D" lines or NCCL's "nRanks N nNodes M" line.
`
