package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tcpxogen/tcpxogen/internal/atomicfile"
	"github.com/tcpxogen/tcpxogen/internal/inputfile"
)

type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// Main turns refusals of the input and output helpers into exit 2 whether or
// not the command marked them, and a lost stdout into exit 1.
func TestMainExitContract(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		run  func(context.Context, []string, Streams) error
		out  func() *bytes.Buffer
		code int
		want string
	}{
		"input refused": {run: func(context.Context, []string, Streams) error {
			_, err := inputfile.Read(fifo, inputfile.Spec{What: "--log"})
			return fmt.Errorf("reading: %w", err)
		}, code: ExitUsage, want: "is a FIFO"},
		"missing input": {run: func(context.Context, []string, Streams) error {
			_, err := inputfile.Read(filepath.Join(dir, "nope"), inputfile.Spec{What: "--values"})
			return err
		}, code: ExitUsage, want: "--values"},
		"output refused": {run: func(context.Context, []string, Streams) error {
			return atomicfile.Write(fifo, []byte("x"), 0o644)
		}, code: ExitUsage, want: "is a FIFO"},
		"stdout lost": {run: func(_ context.Context, _ []string, s Streams) error {
			fmt.Fprintln(s.Out, "PASS")
			return nil
		}, code: ExitFailure, want: "writing the output"},
		"a plain failure": {run: func(context.Context, []string, Streams) error {
			return errors.New("the benchmark failed")
		}, code: ExitFailure, want: "the benchmark failed"},
	} {
		t.Run(name, func(t *testing.T) {
			var e bytes.Buffer
			code := Main(context.Background(), []string{"x"}, Streams{Out: fullWriter{}, Err: &e}, Commands{"x": {Run: tc.run}})
			if code != tc.code || !strings.Contains(e.String(), tc.want) {
				t.Errorf("exit %d, want %d; stderr %q, want it to contain %q", code, tc.code, e.String(), tc.want)
			}
		})
	}
}
