// Package cli is the framework of tcpxogen's subcommands: dispatch, flags,
// exit codes and the flags' shared defaults. Each subcommand lives in its own
// package (extractcmd, rendercmd, ...) as a function of its arguments and
// streams, so tests drive the real command in-process.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/tcpxogen/tcpxogen/internal/atomicfile"
	"github.com/tcpxogen/tcpxogen/internal/inputfile"
)

// Exit codes: the contract scripts and the Makefile rely on.
const (
	ExitOK      = 0
	ExitFailure = 1 // the command ran and found a problem
	ExitUsage   = 2 // bad usage or bad input
)

// Streams are the command's outputs.
type Streams struct {
	Out io.Writer
	Err io.Writer
}

// Command is one subcommand.
type Command struct {
	Summary string
	Run     func(ctx context.Context, args []string, s Streams) error
}

// Commands maps subcommand names to implementations.
type Commands map[string]Command

// Main runs one subcommand of commands and returns the process exit code.
func Main(ctx context.Context, args []string, s Streams, commands Commands) int {
	if len(args) == 0 {
		usage(s.Err, commands)
		return ExitUsage
	}
	if args[0] == "-h" || args[0] == "--help" {
		// Asked-for help is the output: stdout, so it pipes into a pager.
		usage(s.Out, commands)
		return ExitOK
	}
	if args[0] == "--version" {
		// The conventional spelling of the version command, when there is one.
		if _, ok := commands["version"]; ok {
			args = append([]string{"version"}, args[1:]...)
		}
	}
	cmd, ok := commands[args[0]]
	if args[0] == "help" {
		// The command list, or with --markdown the reference (reference.go).
		cmd, ok = helpCommand(commands), true
	}
	if !ok {
		fmt.Fprintf(s.Err, "tcpxogen: unknown command %q\n\n", args[0])
		usage(s.Err, commands)
		return ExitUsage
	}
	out := &watchedWriter{w: s.Out}
	err := cmd.Run(ctx, args[1:], Streams{Out: out, Err: s.Err})
	if err == nil && out.err != nil {
		// A report that did not reach its reader is not a pass: `check >
		// /dev/full` must not exit 0.
		err = fmt.Errorf("writing the output: %w", out.err)
	}
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, pflag.ErrHelp):
		return ExitOK
	}
	fmt.Fprintf(s.Err, "tcpxogen %s: %v\n", args[0], err)
	if isBadInput(err) {
		return ExitUsage
	}
	return ExitFailure
}

// isBadInput reports whether err is the user's to fix (exit 2): marked so by
// the command, by a library (an error with a BadInput method that says so:
// libraries cannot import this package), or a file input or output target
// the helpers refused, which every command reports the same way whether or
// not it marked it.
func isBadInput(err error) bool {
	var ue usageError
	var ie *inputfile.Error
	var marked interface{ BadInput() bool }
	return errors.As(err, &ue) || errors.Is(err, atomicfile.ErrRefused) || errors.As(err, &ie) ||
		(errors.As(err, &marked) && marked.BadInput())
}

// IsBadInput is isBadInput for a command that sorts the errors of several
// inputs before returning one.
func IsBadInput(err error) bool { return isBadInput(err) }

// watchedWriter remembers the first write error, so a command that ignores
// Fprintf's result still fails when its output is lost.
type watchedWriter struct {
	w   io.Writer
	err error
}

func (w *watchedWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

func usage(w io.Writer, commands Commands) {
	fmt.Fprintln(w, "Usage: tcpxogen COMMAND [flags]\n\nCommands:")
	for _, n := range slices.Sorted(maps.Keys(commands)) {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].Summary)
	}
	fmt.Fprintln(w, "\nRun `tcpxogen COMMAND --help` for a command's flags.\nExit status: 0 ok, 1 failure, 2 bad usage or bad input.")
}

// usageError marks bad usage or bad input (exit 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// BadInput returns an error that makes the command exit 2.
func BadInput(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// NewFlags returns a flag set whose parse errors and --help behave the same in
// every subcommand.
func NewFlags(name, synopsis string, s Streams) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	// With ContinueOnError pflag prints nothing on a parse error (Main
	// prints the error) and calls Usage only for -h/--help: asked-for help,
	// which is the command's output and goes to stdout.
	fs.SetOutput(s.Out)
	fs.Usage = func() {
		fmt.Fprintf(s.Out, "Usage: tcpxogen %s\n\n", synopsis)
		if !fs.HasAvailableFlags() {
			fmt.Fprintln(s.Out, "Flags: none besides -h, --help.")
			return
		}
		fmt.Fprintln(s.Out, "Flags:")
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses args of a command that takes no positional arguments; bad
// flags and stray arguments are usage errors.
func Parse(fs *pflag.FlagSet, args []string) error { return ParseArgs(fs, args, 0, "") }

// ParseArgs parses args of a command that takes exactly n positional
// arguments, described by what for the error message.
func ParseArgs(fs *pflag.FlagSet, args []string, n int, what string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	switch {
	case fs.NArg() == n:
		return nil
	case n == 0:
		return BadInput("unexpected arguments %q", fs.Args())
	}
	return BadInput("want %s, got %d argument(s)", what, fs.NArg())
}

// IsTerminal reports whether w is a terminal; progress is only for humans.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// DefaultCacheDir honours TCPXOGEN_CACHE_DIR, then the user cache directory.
func DefaultCacheDir() string {
	if d := os.Getenv("TCPXOGEN_CACHE_DIR"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "tcpxogen")
	}
	return ""
}
