// Command bench measures top-down extraction against the flatten baseline
// (what `crane export | tar` does: mutate.Extract of the whole image) on a
// synthetic installer image in a real local registry. Each measurement runs
// in a child process so its peak RSS is its own.
//
// The synthetic image has the published installer's layer order (the
// reconstruction tree's layers, from tcpxo.dockerfile) with filler content
// after the layers that are large in the real image, so the figures come
// from the real shape: the profile facts sit in the top layers, while the
// NCCL core sits under the CMake, googletest, abseil and protobuf builds.
//
//	go run ./tools/bench [--size BYTES] [--layer NAME=BYTES]...
package main

import (
	"archive/tar"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/pflag"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/imagefs"
	"github.com/tcpxogen/tcpxogen/internal/imagesource"
	"github.com/tcpxogen/tcpxogen/internal/reconstruction"
	"github.com/tcpxogen/tcpxogen/internal/registrytest"
	"github.com/tcpxogen/tcpxogen/pipeline/extract"
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
	// LayersRead and LayersTotal are the scan's (scan phases only).
	LayersRead  int `json:"layersRead"`
	LayersTotal int `json:"layersTotal"`
	// MustRead is the compressed bytes of the layers from the top down to
	// the deepest one that supplied a wanted file (scan phases only): what
	// a top-down scan cannot avoid reading.
	MustRead int64 `json:"mustRead,omitempty"`
	// LayerBytes is what the scan fetched of layers alone (Bytes adds the
	// manifest and config), to compare with MustRead.
	LayerBytes int64 `json:"layerBytes,omitempty"`
}

// defaultLayerSizes are filler sizes, in uncompressed bytes, added after
// the reconstruction's layer of the same name. The layers and their order
// are tcpxo.dockerfile's; the sizes are estimates of what each step
// installs (the CUDA devel base is --size), to be overridden with --layer
// when better numbers are known.
var defaultLayerSizes = map[string]int64{
	"10-apt-upgrade":    100 << 20, // apt-get upgrade of the Ubuntu 22.04 base
	"20-apt-install":    600 << 20, // openssh-server, libopenmpi-dev, build-essential, cmake, protobuf, ...
	"30-nccl":           300 << 20, // nccl-netsupport sources and build
	"40-nccl-tests":     40 << 20,  // nccl-tests, plain build
	"41-nccl-tests-mpi": 40 << 20,  // nccl-tests, MPI=1 build
	"50-cmake":          100 << 20, // CMake 3.26.4 from source
	"51-googletest":     20 << 20,  // googletest v1.14.0
	"52-abseil":         150 << 20, // abseil 20240116.2
	"53-protobuf":       250 << 20, // protobuf v27.1
}

// profileWants are the files the first version read: the profiles and the
// entry script in the top layers, and the plugin directory listing. Its
// figure is kept beside the honest one for comparison.
func profileWants() []imagefs.Want {
	return slices.DeleteFunc(extract.Wants(), func(w imagefs.Want) bool {
		return !strings.HasPrefix(w.Path, "/scripts/")
	})
}

func main() {
	fs := pflag.NewFlagSet("bench", pflag.ExitOnError)
	size := fs.Int64("size", 2<<30, "synthetic CUDA devel base size in bytes")
	layerFlags := fs.StringArray("layer", nil, "filler after a reconstruction layer, NAME=BYTES (repeatable; defaults sized from the Dockerfile's steps)")
	phase := fs.String("phase", "", "internal: run one measurement phase (scan|extract|flatten) against --ref")
	ref := fs.String("ref", "", "internal: image reference by digest")
	cache := fs.String("cache-dir", "", "internal: blob cache for the topdown phase")
	_ = fs.Parse(os.Args[1:])
	var err error
	if *phase != "" {
		err = child(*phase, *ref, *cache)
	} else {
		var sizes map[string]int64
		if sizes, err = layerSizes(*size, *layerFlags); err == nil {
			err = run(sizes)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// layerSizes merges --layer flags into the defaults; the base is --size.
func layerSizes(base int64, flags []string) (map[string]int64, error) {
	sizes := maps.Clone(defaultLayerSizes)
	sizes["00-base"] = base
	for _, f := range flags {
		name, val, ok := strings.Cut(f, "=")
		n, err := strconv.ParseInt(val, 10, 64)
		if !ok || err != nil || n < 0 {
			return nil, fmt.Errorf("--layer %q: want NAME=BYTES, e.g. 53-protobuf=262144000", f)
		}
		if _, known := sizes[name]; !known {
			return nil, fmt.Errorf("--layer %q: %s is not a sized layer (%s)", f, name, strings.Join(slices.Sorted(maps.Keys(sizes)), ", "))
		}
		sizes[name] = n
	}
	return sizes, nil
}

func run(sizes map[string]int64) error {
	var size int64
	for _, n := range sizes {
		size += n
	}
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
	big, err := push(reg.Host+"/bench/installer-big:"+b.Images.Installer.Version, tree, sizes, tmp)
	if err != nil {
		return err
	}
	fmt.Printf("  pushed in %s\n", time.Since(start).Round(time.Millisecond))
	small, err := push(reg.Host+"/bench/installer:"+b.Images.Installer.Version, tree, nil, tmp)
	if err != nil {
		return err
	}

	// The gIB installer on a synthetic base of the same size as the TCPXO
	// image's CUDA base, below its payload: what a top-down read of the gIB
	// facts must not fetch.
	gibTree := filepath.Join(root, extract.GIBTestdataDir, b.Images.GIBInstaller.Version)
	gib, err := push(reg.Host+"/bench/gib:"+b.Images.GIBInstaller.Version, gibTree, map[string]int64{"00-base": sizes["00-base"]}, tmp)
	if err != nil {
		return err
	}

	cache := filepath.Join(tmp, "cache")
	results := map[string]measurement{}
	for _, p := range append(phases(big, small, cache), gibPhases(gib, filepath.Join(tmp, "gib-cache"))...) {
		m, err := spawnMedian(p.runs, p.phase, p.ref, p.cache)
		if err != nil {
			return fmt.Errorf("%s phase: %w", p.key, err)
		}
		results[p.key] = m
	}
	if err := lintPhases(root, tmp, results); err != nil {
		return err
	}
	return report(size, sizes["00-base"], results)
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
		{"topdown-profile", "scan-profile", big, "", 5},
		{"topdown", "scan", big, "", 5},
		{"flatten", "flatten", big, "", 1},
		{"reconstruction", "extract", small, "", 1},
		{"cold", "extract", big, cache, 1},
		{"warm", "extract", big, cache, 3},
	}
}

// gibPhases extract the gIB facts through a cache, cold then warm.
func gibPhases(gib, cache string) []phase {
	return []phase{
		{"gib-cold", "extract-gib", gib, cache, 1},
		{"gib-warm", "extract-gib", gib, cache, 3},
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

// push builds the reconstruction with a gzip'd synthetic filler after each
// layer sizes names (none when sizes is nil) and pushes it; it returns
// ref@digest.
func push(ref, tree string, sizes map[string]int64, tmp string) (string, error) {
	cfg, err := reconstruction.LoadConfig(tree)
	if err != nil {
		return "", err
	}
	dirs, err := reconstruction.LayerDirs(tree)
	if err != nil {
		return "", err
	}
	var layers []v1.Layer
	for i, dir := range dirs {
		l, err := reconstruction.LayerFromDir(dir)
		if err != nil {
			return "", err
		}
		layers = append(layers, l)
		if n := sizes[filepath.Base(dir)]; n > 0 {
			filler, err := reconstruction.SyntheticBaseFile(tmp, n, uint64(i+1))
			if err != nil {
				return "", err
			}
			layers = append(layers, filler)
		}
	}
	img, err := reconstruction.Image(cfg, layers...)
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
	var scanned imagefs.Stats
	var must int64
	start := time.Now()
	var err error
	switch phase {
	case "scan-profile":
		scanned, must, err = scan(ref, profileWants(), &stats)
	case "scan":
		scanned, must, err = scan(ref, extract.Wants(), &stats)
	case "extract":
		err = topDown(ref, cache, &stats)
	case "extract-gib":
		err = topDownGIB(ref, cache, &stats)
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
	return json.NewEncoder(os.Stdout).Encode(measurement{Phase: phase, Wall: wall, Requests: snap.Requests, Bytes: snap.Bytes, MaxRSSKB: peak,
		LayersRead: scanned.LayersRead, LayersTotal: scanned.LayersTotal, MustRead: must, LayerBytes: scanned.CompressedBytes})
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
	// The daemon facts come from its own (small) reconstruction: the bench
	// measures the installer image.
	daemon := extract.SourceSpec{Kind: extract.SourceTestdata, Raw: extract.SourceTestdata}
	_, err = extract.Run(context.Background(), extract.Config{Root: root, BOM: b, Source: spec, DaemonSource: daemon, CacheDir: cache, Stats: stats})
	return err
}

// topDownGIB is the gIB extraction: extract.RunGIB with the installer
// image declared as a substitute for the pinned one; the diagnostic image
// comes from its own (small) reconstruction.
func topDownGIB(ref, cache string, stats *imagesource.Stats) error {
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
	td := extract.SourceSpec{Kind: extract.SourceTestdata, Raw: extract.SourceTestdata}
	_, err = extract.RunGIB(context.Background(), extract.Config{Root: root, BOM: b, Source: td, GIBSource: spec, GIBDiagnosticSource: td, CacheDir: cache, Stats: stats})
	return err
}

// scan is top-down extraction's image work alone: open the image by digest
// and read the wanted files, as extract does, without evaluating profiles.
func scan(ref string, wants []imagefs.Want, stats *imagesource.Stats) (imagefs.Stats, int64, error) {
	src, err := imagesource.Registry(ref, imagesource.WithStats(stats))
	if err != nil {
		return imagefs.Stats{}, 0, err
	}
	img, err := src.Image(context.Background())
	if err != nil {
		return imagefs.Stats{}, 0, err
	}
	res, err := imagefs.Scan(context.Background(), img, wants, imagefs.WithList(extract.PluginDir))
	if err != nil {
		return imagefs.Stats{}, 0, err
	}
	must, err := mustRead(img, res)
	return res.Stats, must, err
}

// mustRead sums the compressed sizes of img's layers from the top down to
// the deepest layer that supplied a found file: the bytes any top-down
// reader of those facts has to fetch, whatever it does with them.
func mustRead(img v1.Image, res *imagefs.Result) (int64, error) {
	layers, err := img.Layers()
	if err != nil {
		return 0, err
	}
	deepest := len(layers)
	for i, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return 0, err
		}
		for _, f := range res.Files {
			if f.Layer == d && i < deepest {
				deepest = i
			}
		}
	}
	if deepest == len(layers) {
		return 0, errors.New("the scan found no wanted file in any layer")
	}
	var sum int64
	for _, l := range layers[deepest:] {
		n, err := l.Size()
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
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

// lintPhases times `tcpxogen check trainjob` as a user runs it: the built
// binary, process start included, on one file and on 100 files in one run.
// Peak RSS is the child's ru_maxrss (the binary is exec'd from a fork of
// this small process, so the fork-time size it may report is below the
// child's own peak).
func lintPhases(root, tmp string, r map[string]measurement) error {
	bin := filepath.Join(tmp, "tcpxogen")
	build := exec.Command("go", "build", "-o", bin, "./tools/tcpxogen")
	build.Dir, build.Stderr = root, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build tcpxogen: %w", err)
	}
	file := filepath.Join(root, "tools/tcpxogen/internal/checkcmd/testdata/trainjob-env-debug.yaml")
	for key, n := range map[string]int{"check-trainjob-1": 1, "check-trainjob-100": 100} {
		args := []string{"check", "trainjob"}
		for range n {
			args = append(args, file)
		}
		var runs []measurement
		for range 5 {
			cmd := exec.Command(bin, args...)
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("%s: %w\n%s", key, err, out)
			}
			m := measurement{Phase: key, Wall: time.Since(start)}
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				m.MaxRSSKB = ru.Maxrss
			}
			runs = append(runs, m)
		}
		slices.SortFunc(runs, func(a, b measurement) int { return cmp.Compare(a.Wall, b.Wall) })
		r[key] = runs[len(runs)/2]
	}
	return nil
}

// Targets of issues 22 and 38 (the bench, not timed tests, holds them).
// The every-fact scan is held to the machine's own limit, not to a fixed
// ratio over flatten: how much faster than flatten it can be depends on
// how deep the deepest fact sits and on the cores, and a fixed 25x was
// unreachable on 2 cores (issue 38 measured 4.7x at 58 % of the limit).
const (
	minLimitShare  = 0.9
	maxWarmShare   = 0.02
	maxLintOne     = 200 * time.Millisecond
	maxLintHundred = 3 * time.Second
)

func report(size, base int64, r map[string]measurement) error {
	tp, td, fl, rec, warm := r["topdown-profile"], r["topdown"], r["flatten"], r["reconstruction"], r["warm"]
	speedup := float64(fl.Wall) / float64(max(tp.Wall, 1))
	honest := float64(fl.Wall) / float64(max(td.Wall, 1))
	fmt.Printf("\n%-28s %12s %14s %10s %12s %8s\n", "measurement", "wall", "bytes read", "requests", "peak RSS", "layers")
	for _, k := range []string{"topdown-profile", "topdown", "flatten", "reconstruction", "cold", "warm", "gib-cold", "gib-warm", "check-trainjob-1", "check-trainjob-100"} {
		m := r[k]
		layers := ""
		if m.LayersTotal > 0 {
			layers = fmt.Sprintf("%d/%d", m.LayersRead, m.LayersTotal)
		}
		fmt.Printf("%-28s %12s %14d %10d %9d KB %8s\n", k, m.Wall.Round(time.Microsecond), m.Bytes, m.Requests, m.MaxRSSKB, layers)
	}
	fmt.Printf("\nsynthetic image %.2f GB uncompressed (CUDA base %.2f GB) in the published layer order\n", float64(size)/1e9, float64(base)/1e9)
	fmt.Printf("  profile facts only (the first version's figure): %.0fx faster than flatten, %.6f%% of its bytes\n",
		speedup, 100*float64(tp.Bytes)/float64(max(fl.Bytes, 1)))
	fmt.Printf("  every fact the generator reads (down to the NCCL core): %.1fx faster than flatten, %.2f%% of its bytes\n",
		honest, 100*float64(td.Bytes)/float64(max(fl.Bytes, 1)))
	var failed []string
	check := func(ok bool, what string) {
		mark := "met"
		if !ok {
			mark, failed = "MISSED", append(failed, what)
		}
		fmt.Printf("  target %-52s %s\n", what, mark)
	}
	check(speedup >= minSpeedup, fmt.Sprintf("profile facts >= %dx faster than flatten", minSpeedup))
	check(td.LayersRead < td.LayersTotal-1, "every fact read without the CUDA base layers")
	check(rec.Bytes < maxReconstructRead, "reconstruction layout: < 1 MB of layer data read")
	check(warm.Requests == 0, "warm re-run: zero registry requests")
	gc, gw := r["gib-cold"], r["gib-warm"]
	check(gc.Bytes < maxReconstructRead, fmt.Sprintf("gIB facts: < 1 MB read, the %.2f GB base below the payload untouched (%d bytes)", float64(base)/1e9, gc.Bytes))
	check(gw.Requests == 0, "gIB warm re-run: zero registry requests")
	cold := r["cold"]
	check(float64(warm.Wall) <= maxWarmShare*float64(cold.Wall), fmt.Sprintf("warm <= %.0f%% of cold (%.1f%%)", 100*maxWarmShare, 100*float64(warm.Wall)/float64(max(cold.Wall, 1))))
	l1, l100 := r["check-trainjob-1"], r["check-trainjob-100"]
	check(l1.Wall <= maxLintOne, fmt.Sprintf("check trainjob, 1 file <= %s (%s)", maxLintOne, l1.Wall.Round(time.Millisecond)))
	check(l100.Wall <= maxLintHundred, fmt.Sprintf("check trainjob, 100 files <= %s (%s)", maxLintHundred, l100.Wall.Round(time.Millisecond)))
	// The limit: flatten inflates and hashes every layer on one core, so
	// its rate is the per-core inflate throughput; with every core busy a
	// top-down scan cannot beat the bytes it must read (the layers down to
	// the deepest fact) at that rate times cores.
	cores := runtime.GOMAXPROCS(0)
	rate := float64(fl.Bytes) / max(fl.Wall.Seconds(), 1e-9)
	limit := time.Duration(float64(td.MustRead) / (rate * float64(cores)) * float64(time.Second))
	share := float64(limit) / float64(max(td.Wall, 1))
	fmt.Printf("  limit: %.0f MB/s per core (flatten's rate) x %d cores: the %d bytes down to the deepest fact in %s at best; measured %s (%.0f%% of the limit's speed)\n",
		rate/1e6, cores, td.MustRead, limit.Round(time.Millisecond), td.Wall.Round(time.Millisecond), 100*share)
	check(td.MustRead > 0 && td.LayerBytes <= td.MustRead, fmt.Sprintf("every fact: layer bytes read <= the layers down to the deepest fact (%d of %d)", td.LayerBytes, td.MustRead))
	check(share >= minLimitShare, fmt.Sprintf("every fact at >= %.0f%% of the limit's speed (%.0f%%)", 100*minLimitShare, 100*share))
	if len(failed) > 0 {
		return fmt.Errorf("%d target(s) missed", len(failed))
	}
	return nil
}

func findRoot() (string, error) { return bom.ResolveRoot("") }

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
