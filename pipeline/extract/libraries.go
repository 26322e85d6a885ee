package extract

import (
	"bytes"
	"cmp"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/tcpxogen/tcpxogen/internal/excerpt"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/imagefs"
)

// MaxPluginLibraryBytes bounds what is read of one shared object under
// /plugins: the dynamic section can sit anywhere in the file, so the whole
// file is read, and a larger file is refused rather than buffered.
const MaxPluginLibraryBytes = 256 << 20

// LibraryError names a file under /plugins whose dynamic section cannot be
// read: not ELF, truncated, or over MaxPluginLibraryBytes.
type LibraryError struct {
	Path    string
	Problem string
	Err     error
}

func (e *LibraryError) Error() string {
	msg := fmt.Sprintf("%s %s: tcpxogen reads each plugin library's DT_NEEDED entries to know what the worker image must provide", e.Path, e.Problem)
	if e.Err != nil {
		msg += " (" + excerpt.Quote(e.Err.Error()) + ")"
	}
	return msg
}

func (e *LibraryError) Unwrap() error { return e.Err }

// isSharedObject says whether a /plugins entry is named as a shared object
// (libX.so or libX.so.N).
func isSharedObject(name string) bool {
	return strings.HasSuffix(name, ".so") || strings.Contains(name, ".so.")
}

// pluginLibraries reads the dynamic section of every shared object the
// /plugins listing holds. The files were seen in the layers the first scan
// read, so this scan resolves them there and reads no layer below those.
func pluginLibraries(ctx context.Context, cfg Config, img v1.Image, entries []string) ([]facts.Library, error) {
	return libraries(ctx, cfg, img, PluginDir, entries)
}

// libraries reads the dynamic section of every shared object among the
// entries of dir.
func libraries(ctx context.Context, cfg Config, img v1.Image, dir string, entries []string) ([]facts.Library, error) {
	var wants []imagefs.Want
	for _, name := range entries {
		if isSharedObject(name) {
			wants = append(wants, imagefs.Want{Path: path.Join(dir, name), Content: true})
		}
	}
	if len(wants) == 0 {
		return nil, nil
	}
	lim := cfg.Limits
	lim.MaxFileBytes = cmp.Or(cfg.MaxLibraryBytes, MaxPluginLibraryBytes)
	res, err := imagefs.Scan(ctx, img, wants, imagefs.WithLimits(lim))
	var limit *imagefs.LimitError
	if errors.As(err, &limit) {
		return nil, &LibraryError{Path: dir, Problem: fmt.Sprintf("holds a shared object over the %d bytes a plugin library may have", lim.MaxFileBytes), Err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("read the plugin libraries under %s: %w", dir, err)
	}
	libs := make([]facts.Library, 0, len(wants))
	for _, w := range wants {
		needed, err := dtNeeded(w.Path, res.Files[w.Path].Data)
		if err != nil {
			return nil, err
		}
		libs = append(libs, facts.Library{Name: path.Base(w.Path), Needed: needed})
	}
	slices.SortFunc(libs, func(a, b facts.Library) int { return strings.Compare(a.Name, b.Name) })
	return libs, nil
}

// dtNeeded returns the DT_NEEDED sonames of the ELF shared object data.
func dtNeeded(p string, data []byte) (needed []string, err error) {
	// debug/elf is not hardened against every malformed input: a panic on
	// an image's bytes is this file's error, not the tool's crash.
	defer func() {
		if r := recover(); r != nil {
			needed, err = nil, &LibraryError{Path: p, Problem: "is a malformed ELF file", Err: fmt.Errorf("%v", r)}
		}
	}()
	if len(data) < 4 || !bytes.Equal(data[:4], []byte(elf.ELFMAG)) {
		return nil, &LibraryError{Path: p, Problem: fmt.Sprintf("is not an ELF file (it starts %s)", excerpt.Quote(string(data[:min(len(data), 16)])))}
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, &LibraryError{Path: p, Problem: fmt.Sprintf("is a truncated or malformed ELF file (%d bytes)", len(data)), Err: err}
	}
	if f.Type != elf.ET_DYN {
		return nil, &LibraryError{Path: p, Problem: fmt.Sprintf("is an ELF %s, not a shared object", f.Type)}
	}
	if f.SectionByType(elf.SHT_DYNAMIC) == nil {
		return nil, &LibraryError{Path: p, Problem: "has no dynamic section"}
	}
	needed, err = f.DynString(elf.DT_NEEDED)
	if err != nil {
		return nil, &LibraryError{Path: p, Problem: "has a dynamic section that cannot be read (truncated?)", Err: err}
	}
	if needed == nil {
		needed = []string{}
	}
	return needed, nil
}
