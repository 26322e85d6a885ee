// Package inputfile opens the files a user hands tcpxogen, and refuses what
// is not one.
//
// Every file input goes through Read or Open, which
//   - refuse anything but a regular file before reading a byte: a FIFO would
//     block forever, /dev/zero would fill memory, a directory reads as an
//     error deep inside a parser;
//   - read at most the limit of the input's kind, and say the real size when
//     a file is over it;
//   - optionally refuse a file whose symlinks lead out of the directory it is
//     expected in, so a data file that points at a secret is never read (and
//     so never quoted back in an error).
//
// Errors name the input the way the user named it (a flag, a file) and wrap
// ErrNotRegular, ErrTooLarge or ErrOutside, or the os error.
package inputfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Limits per kind of input. Each is far above what the real file holds, so
// only a wrong path or a hostile file reaches it.
const (
	// MaxData bounds the project's data files (bom/*.yaml), --values and
	// --recipe: a few KiB each in practice.
	MaxData = 1 << 20
	// MaxTrainJob bounds a `check trainjob` file: a TrainJob is a few KiB,
	// a multi-document file of them a few hundred; the API server itself
	// refuses a request body over 3 MiB.
	MaxTrainJob = 3 << 20
	// MaxManifests bounds --trainer-manifests: Kubeflow Trainer's rendered
	// release with its JobSet is about 1.5 MiB, nearly all CRD schemas.
	MaxManifests = 16 << 20
	// MaxKubeconfig bounds --kubeconfig; kubectl's own files are a few KiB
	// even with embedded certificates.
	MaxKubeconfig = 4 << 20
	// MaxSource bounds the checkout's own files a command reads (the
	// generated Go file, the goldens, the guide, go.mod): each is tens of
	// KiB.
	MaxSource = 4 << 20
	// MaxLog bounds an nccl-report --log: a 64-rank run at NCCL_DEBUG=INFO
	// logs a few MiB; 1 GiB leaves room for TRACE without reading a disk
	// image by mistake.
	MaxLog = 1 << 30
)

// Errors the helper's errors wrap.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("over the size limit")
	ErrOutside    = errors.New("leads outside its directory")
)

// Spec says what an input is.
type Spec struct {
	// What names the input in messages as the user knows it: "--log",
	// "TrainJob file", "bill of materials".
	What string
	// Max is the most bytes read; 0 means MaxData.
	Max int64
	// Within, when set, is the directory the file must be in once every
	// symlink on its path is resolved.
	Within string
}

func (s Spec) max() int64 {
	if s.Max <= 0 {
		return MaxData
	}
	return s.Max
}

func (s Spec) errorf(path string, err error, format string, a ...any) error {
	return &Error{What: s.What, Path: path, Err: err, Detail: fmt.Sprintf(format, a...)}
}

// Error is a refused or unreadable input.
type Error struct {
	What, Path string
	Detail     string
	Err        error
}

func (e *Error) Error() string {
	name := e.Path
	if e.What != "" {
		name = e.What + " " + e.Path
	}
	if e.Detail == "" {
		// The os error repeats the path; the message names it once.
		err := e.Err
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Sprintf("%s: %v", name, err)
	}
	return name + " " + e.Detail
}

func (e *Error) Unwrap() error { return e.Err }

// Read returns the content of the regular file at path, refusing it as Spec
// says.
func Read(path string, s Spec) ([]byte, error) {
	f, err := Open(path, s)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Check refuses path as Open would, for a reader that must open the file
// itself (client-go's kubeconfig loader, the cache's verifying reader).
func Check(path string, s Spec) error {
	f, err := Open(path, s)
	if err != nil {
		return err
	}
	return f.Close()
}

// File is an opened input. Reads past the limit fail with ErrTooLarge: a
// file may grow between the check and the read.
type File struct {
	f    *os.File
	r    io.Reader
	n    int64
	spec Spec
	path string
	size int64
}

// Size is the file's size when it was opened.
func (f *File) Size() int64 { return f.size }

func (f *File) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	f.n += int64(n)
	if f.n > f.spec.max() {
		size := f.n
		if st, err := f.f.Stat(); err == nil {
			size = max(size, st.Size())
		}
		return n, f.tooLarge(size)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return n, f.spec.errorf(f.path, err, "")
	}
	return n, err
}

func (f *File) Close() error { return f.f.Close() }

func (f *File) tooLarge(size int64) error {
	return f.spec.errorf(f.path, ErrTooLarge, "is %s, over the %s limit for this input: check the path", bytesWord(size), bytesWord(f.spec.max()))
}

// Open opens the regular file at path for reading at most the Spec's limit.
func Open(path string, s Spec) (*File, error) {
	if path == "" {
		return nil, s.errorf(path, fs.ErrNotExist, "is empty: give a file")
	}
	if s.Within != "" {
		if err := within(path, s); err != nil {
			return nil, err
		}
	}
	// Stat before opening: opening a FIFO for reading blocks until a writer
	// appears, which may be never.
	st, err := os.Stat(path)
	if err != nil {
		return nil, s.errorf(path, err, "")
	}
	if !st.Mode().IsRegular() {
		return nil, s.errorf(path, ErrNotRegular, "is %s, not a regular file: give a file", KindOf(st.Mode()))
	}
	f, err := openNonBlocking(path)
	if err != nil {
		return nil, s.errorf(path, err, "")
	}
	// And again on what was opened, which may have been swapped since.
	st, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, s.errorf(path, err, "")
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, s.errorf(path, ErrNotRegular, "is %s, not a regular file: give a file", KindOf(st.Mode()))
	}
	// One byte past the limit tells a file over it from one exactly at it.
	in := &File{f: f, spec: s, path: path, size: st.Size(), r: io.LimitReader(f, s.max()+min(1, math.MaxInt64-s.max()))}
	if st.Size() > s.max() {
		f.Close()
		return nil, in.tooLarge(st.Size())
	}
	return in, nil
}

// within refuses path when its symlinks lead out of s.Within.
func within(path string, s Spec) error {
	dir, err := filepath.EvalSymlinks(s.Within)
	if err != nil {
		return s.errorf(path, err, "")
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return s.errorf(path, err, "")
	}
	dir, _ = filepath.Abs(dir)
	real, _ = filepath.Abs(real)
	rel, err := filepath.Rel(dir, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return s.errorf(path, ErrOutside, "is a symlink that leads outside %s: this input is read only from there; copy the file in instead of linking it", s.Within)
	}
	return nil
}

// KindOf names what a non-regular file is ("a FIFO (named pipe)", "a
// character device", ...), for messages that refuse it; outputs use it too.
func KindOf(m fs.FileMode) string {
	switch t := m.Type(); {
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a block device"
	}
	return "not a regular file (" + m.Type().String() + ")"
}

// bytesWord says a size exactly and, past a KiB, in binary units too.
func bytesWord(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%d bytes (%.1f GiB)", n, float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%d bytes (%.1f MiB)", n, float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d bytes (%.1f KiB)", n, float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
