// Command bench measures top-down extraction against the flatten baseline
// (what `crane export | tar` does: mutate.Extract of the whole image) on a
// synthetic installer image in a real local registry. Each measurement runs
// in a child process so its peak RSS is its own.
//
//	go run ./tools/tcpxogen/internal/bench [--size BYTES]
package main

import (
	"archive/tar"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/pflag"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/cli"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/extract"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/imagefs"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/imagesource"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/reconstruction"
	"github.com/tcpxogen/tcpxogen/tools/tcpxogen/internal/registrytest"
)

// Targets from the spine issue.
const (
	minSpeedup         = 300
	maxReconstructRead = 1 << 20
)

// measurement is what a child phase reports on stdout.
type measurement struct {
	Phase    string        `json:"phase"`
	Wall     time.Duration `json:"wall"`
	Requests int64         `json:"requests"`
	Bytes    int64         `json:"bytes"`
	MaxRSSKB int64         `json:"maxRSSKB"`
}

func main() {
	fs := pflag.NewFlagSet("bench", pflag.ExitOnError)
	size := fs.Int64("size", 2<<30, "synthetic base layer size in bytes")
	phase := fs.String("phase", "", "internal: run one measurement phase (scan|extract|flatten) against --ref")
	ref := fs.String("ref", "", "internal: image reference by digest")
	cache := fs.String("cache-dir", "", "internal: blob cache for the topdown phase")
	_ = fs.Parse(os.Args[1:])
	var err error
	if *phase != "" {
		err = child(*phase, *ref, *cache)
	} else {
		err = run(*size)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(size int64) error {
	root, err := findRoot()
	if err != nil {
		return err
	}
	b, err := bom.Load(filepath.Join(root, bom.DefaultPath()))
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "tcpxogen-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	reg, stop, err := registrytest.StartProcess(filepath.Join(tmp, "registry"))
	if err != nil {
		return err
	}
	defer stop()

	tree := filepath.Join(root, extract.TestdataDir, b.Images.Installer.Version)
	fmt.Printf("building and pushing a %.2f GB synthetic installer image to %s ...\n", float64(size)/1e9, reg.Host)
	start := time.Now()
	big, err := push(reg.Host+"/bench/installer-big:"+b.Images.Installer.Version, tree, size, tmp)
	if err != nil {
		return err
	}
	fmt.Printf("  pushed in %s\n", time.Since(start).Round(time.Millisecond))
	small, err := push(reg.Host+"/bench/installer:"+b.Images.Installer.Version, tree, 0, tmp)
	if err != nil {
		return err
	}

	cache := filepath.Join(tmp, "cache")
	results := map[string]measurement{}
	for _, p := range phases(big, small, cache) {
		m, err := spawnMedian(p.runs, p.phase, p.ref, p.cache)
		if err != nil {
			return fmt.Errorf("%s phase: %w", p.key, err)
		}
		results[p.key] = m
	}
	return report(size, results)
}

type phase struct {
	key, phase, ref, cache string
	runs                   int
}

// phases: "topdown" and "flatten" read the same image the same way up to
// what they do with it (scan for the wanted files vs walk the merged
// filesystem); "cold" and "warm" run the whole extraction through a cache.
func phases(big, small, cache string) []phase {
	return []phase{
		{"topdown", "scan", big, "", 5},
		{"flatten", "flatten", big, "", 1},
		{"reconstruction", "extract", small, "", 1},
		{"cold", "extract", big, cache, 1},
		{"warm", "extract", big, cache, 1},
	}
}

// spawnMedian runs a phase n times in fresh processes and keeps the run
// with the median wall time, so one scheduling hiccup on a 2-core machine
// does not decide the ratio.
func spawnMedian(n int, phase, ref, cache string) (measurement, error) {
	var ms []measurement
	for range n {
		m, err := spawn(phase, ref, cache)
		if err != nil {
			return m, err
		}
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b measurement) int { return cmp.Compare(a.Wall, b.Wall) })
	return ms[len(ms)/2], nil
}

// push builds the reconstruction on a gzip'd synthetic base of baseSize
// uncompressed bytes (none when 0) and pushes it; it returns ref@digest.
func push(ref, tree string, baseSize int64, tmp string) (string, error) {
	var bases []v1.Layer
	if baseSize > 0 {
		l, err := reconstruction.SyntheticBaseFile(tmp, baseSize, 1)
		if err != nil {
			return "", err
		}
		bases = append(bases, l)
	}
	img, err := reconstruction.Build(tree, bases...)
	if err != nil {
		return "", err
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return "", err
	}
	if err := remote.Write(tag, img); err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return ref + "@" + d.String(), nil
}

func spawn(phase, ref, cache string) (measurement, error) {
	self, err := os.Executable()
	if err != nil {
		return measurement{}, err
	}
	cmd := exec.Command(self, "--phase", phase, "--ref", ref, "--cache-dir", cache)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return measurement{}, err
	}
	var m measurement
	if err := json.Unmarshal(out, &m); err != nil {
		return measurement{}, fmt.Errorf("decode child result %q: %w", out, err)
	}
	return m, nil
}

func child(phase, ref, cache string) error {
	var stats imagesource.Stats
	start := time.Now()
	var err error
	switch phase {
	case "scan":
		err = scan(ref, &stats)
	case "extract":
		err = topDown(ref, cache, &stats)
	case "flatten":
		err = flatten(ref, &stats)
	default:
		err = fmt.Errorf("unknown phase %q", phase)
	}
	if err != nil {
		return err
	}
	wall := time.Since(start)
	snap := stats.Snapshot()
	peak, err := peakRSSKB()
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(measurement{Phase: phase, Wall: wall, Requests: snap.Requests, Bytes: snap.Bytes, MaxRSSKB: peak})
}

// topDown is the production path: extract.Run with the image declared as a
// substitute for the pinned reference.
func topDown(ref, cache string, stats *imagesource.Stats) error {
	root, err := findRoot()
	if err != nil {
		return err
	}
	b, err := bom.Load(filepath.Join(root, bom.DefaultPath()))
	if err != nil {
		return err
	}
	spec, err := extract.ParseSource(ref)
	if err != nil {
		return err
	}
	_, err = extract.Run(context.Background(), extract.Config{Root: root, BOM: b, Source: spec, CacheDir: cache, Stats: stats})
	return err
}

// scan is top-down extraction's image work alone: open the image by digest
// and read the wanted files, as extract does, without evaluating profiles.
func scan(ref string, stats *imagesource.Stats) error {
	src, err := imagesource.Registry(ref, imagesource.WithStats(stats))
	if err != nil {
		return err
	}
	img, err := src.Image(context.Background())
	if err != nil {
		return err
	}
	_, err = imagefs.Scan(context.Background(), img, extract.Wants(), imagefs.WithList(extract.PluginDir))
	return err
}

// flatten reproduces `crane export | tar -t`: every layer of the merged
// filesystem is fetched and walked.
func flatten(ref string, stats *imagesource.Stats) error {
	src, err := imagesource.Registry(ref, imagesource.WithStats(stats))
	if err != nil {
		return err
	}
	img, err := src.Image(context.Background())
	if err != nil {
		return err
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		if _, err := tr.Next(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return err
		}
	}
	_, err = io.Copy(io.Discard, rc)
	return err
}

func report(size int64, r map[string]measurement) error {
	td, fl, rec, warm := r["topdown"], r["flatten"], r["reconstruction"], r["warm"]
	speedup := float64(fl.Wall) / float64(max(td.Wall, 1))
	fmt.Printf("\n%-28s %12s %14s %10s %12s\n", "measurement", "wall", "bytes read", "requests", "peak RSS")
	for _, k := range []string{"topdown", "flatten", "reconstruction", "cold", "warm"} {
		m := r[k]
		fmt.Printf("%-28s %12s %14d %10d %9d KB\n", k, m.Wall.Round(time.Microsecond), m.Bytes, m.Requests, m.MaxRSSKB)
	}
	fmt.Printf("\nsynthetic base %.2f GB; top-down is %.0fx faster than flatten and read %.6f%% of its bytes\n",
		float64(size)/1e9, speedup, 100*float64(td.Bytes)/float64(max(fl.Bytes, 1)))
	var failed []string
	check := func(ok bool, what string) {
		mark := "met"
		if !ok {
			mark, failed = "MISSED", append(failed, what)
		}
		fmt.Printf("  target %-52s %s\n", what, mark)
	}
	check(speedup >= minSpeedup, fmt.Sprintf("top-down >= %dx faster than flatten", minSpeedup))
	check(rec.Bytes < maxReconstructRead, "reconstruction layout: < 1 MB of layer data read")
	check(warm.Requests == 0, "warm re-run: zero registry requests")
	if len(failed) > 0 {
		return fmt.Errorf("%d target(s) missed", len(failed))
	}
	return nil
}

func findRoot() (string, error) { return cli.RepoRoot("") }

// peakRSSKB reads this process's resident-set high-water mark. getrusage's
// ru_maxrss survives execve, so in a spawned child it reports the parent's
// size at fork; VmHWM belongs to the new address space only.
func peakRSSKB() (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/self/status")
}
