package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fakeCommands is a command set shaped like tcpxogen's: a command with
// flags whose synopsis names flag values, one that dispatches subcommands
// as render does, and one whose help quotes a Markdown fence.
func fakeCommands() Commands {
	leaf := func(name, synopsis string) func(context.Context, []string, Streams) error {
		return func(_ context.Context, args []string, s Streams) error {
			fs := NewFlags(name, synopsis, s)
			fs.String("cache-dir", DefaultCacheDir(), "blob cache")
			fs.StringP("output", "o", "yaml", "yaml or json")
			return Parse(fs, args)
		}
	}
	subs := map[string]func(context.Context, []string, Streams) error{
		"one": leaf("group one", "group one [-o yaml|json]"),
		"two": leaf("group two", "group two [--cache-dir DIR]"),
	}
	return Commands{
		"alpha": {Summary: "the alpha command", Run: leaf("alpha", "alpha [--cache-dir DIR] [-o yaml|json] [--mode fast|slow]")},
		"group": {Summary: "a group (group one, group two)", Run: func(ctx context.Context, args []string, s Streams) error {
			if len(args) > 0 && (args[0] == "--help" || args[0] == "-h") {
				_, err := s.Out.Write([]byte("Usage: tcpxogen group one|two [flags]\n"))
				return err
			}
			if len(args) == 0 || subs[args[0]] == nil {
				return BadInput("want one or two")
			}
			return subs[args[0]](ctx, args[1:], s)
		}},
		"fence": {Summary: "quotes ```yaml", Run: leaf("fence", "fence\n\nA block:\n```yaml\nkind: x\n```")},
	}
}

func TestReferenceListsCommandsAndSubcommands(t *testing.T) {
	t.Setenv("TCPXOGEN_CACHE_DIR", t.TempDir())
	ref, err := Reference(fakeCommands())
	if err != nil {
		t.Fatal(err)
	}
	page := string(ref)
	if !strings.HasPrefix(page, ReferenceHeader+"\n") {
		t.Errorf("the reference does not start with %q:\n%.200s", ReferenceHeader, page)
	}
	var at []int
	for _, h := range []string{"## tcpxogen alpha", "## tcpxogen fence", "## tcpxogen group", "### tcpxogen group one", "### tcpxogen group two", "## tcpxogen help"} {
		i := strings.Index(page, "\n"+h+"\n")
		if i < 0 {
			t.Errorf("no section %q", h)
		}
		at = append(at, i)
	}
	for i := 1; i < len(at); i++ {
		if at[i] < at[i-1] {
			t.Errorf("sections out of order: %v", at)
		}
	}
	// Flag values and arguments of a synopsis are no subcommands.
	for _, w := range []string{"yaml", "json", "fast", "slow", "flags", "one|two"} {
		if strings.Contains(page, "tcpxogen alpha "+w+"\n") || strings.Contains(page, "## tcpxogen group "+w+"\n") {
			t.Errorf("%q is taken for a subcommand", w)
		}
	}
	for _, want := range []string{"the alpha command.\n", "`tcpxogen alpha --help`:\n\n```text\nUsage: tcpxogen alpha [--cache-dir DIR]", "  - [`tcpxogen group one`](#tcpxogen-group-one)\n"} {
		if !strings.Contains(page, want) {
			t.Errorf("the reference lacks %q:\n%s", want, page)
		}
	}
	// The quoted fence cannot close the block it is printed in.
	if !strings.Contains(page, "````text\nUsage: tcpxogen fence\n\nA block:\n```yaml\nkind: x\n```\n") {
		t.Errorf("fence's help is not in a longer fence:\n%s", page)
	}
}

// The cache directory's default is the machine's: the reference names where
// it comes from, and is the same page wherever it is rendered.
func TestReferenceIsTheSameOnEveryMachine(t *testing.T) {
	var pages []string
	for _, dir := range []string{t.TempDir(), "/home/someone/.cache/tcpxogen"} {
		t.Setenv("TCPXOGEN_CACHE_DIR", dir)
		ref, err := Reference(fakeCommands())
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(ref, []byte(dir)) {
			t.Errorf("the reference holds the cache directory %s", dir)
		}
		if !bytes.Contains(ref, []byte(cacheDirDefault)) {
			t.Errorf("the reference does not say where --cache-dir's default comes from")
		}
		pages = append(pages, string(ref))
	}
	if pages[0] != pages[1] {
		t.Error("the reference differs with the cache directory")
	}
}

// A command whose --help fails or writes to stderr stops the reference,
// naming the command.
func TestReferenceRefusesBrokenHelp(t *testing.T) {
	for name, run := range map[string]func(context.Context, []string, Streams) error{
		"fails": func(context.Context, []string, Streams) error { return errors.New("no help here") },
		"stderr": func(_ context.Context, _ []string, s Streams) error {
			_, err := s.Err.Write([]byte("help\n"))
			return err
		},
		"silent": func(context.Context, []string, Streams) error { return nil },
	} {
		cmds := fakeCommands()
		cmds["broken"] = Command{Run: run}
		if _, err := Reference(cmds); err == nil || !strings.Contains(err.Error(), "tcpxogen broken --help") {
			t.Errorf("%s: error %v, want one naming tcpxogen broken --help", name, err)
		}
	}
}

// `help` keeps listing the commands; --markdown prints the reference or
// writes it with --out; bad usage is exit 2.
func TestHelpCommand(t *testing.T) {
	t.Setenv("TCPXOGEN_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	want, err := Reference(fakeCommands())
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "commands.md")
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"help"}, ExitOK, "Commands:\n  alpha", ""},
		{[]string{"help", "group"}, ExitOK, "Commands:\n  alpha", ""},
		{[]string{"--help"}, ExitOK, "Commands:\n  alpha", ""},
		{[]string{"help", "--help"}, ExitOK, "--markdown", ""},
		{[]string{"help", "--markdown"}, ExitOK, string(want), ""},
		{[]string{"help", "--markdown", "--out", out}, ExitOK, "", "written"},
		{[]string{"help", "--markdown", "--out", out}, ExitOK, "", "unchanged"},
		{[]string{"help", "--markdown", "--out", fifo}, ExitUsage, "", "is a FIFO"},
		{[]string{"help", "--markdown", "--out", dir}, ExitUsage, "", "is a directory"},
		{[]string{"help", "--out", out}, ExitUsage, "", "--out is for --markdown"},
		{[]string{"help", "--markdown", "group"}, ExitUsage, "", "unexpected arguments"},
		{[]string{"help", "--bogus"}, ExitUsage, "", "unknown flag"},
	} {
		var o, e bytes.Buffer
		code := Main(context.Background(), tc.args, Streams{Out: &o, Err: &e}, fakeCommands())
		if code != tc.code || !strings.Contains(o.String(), tc.stdout) || !strings.Contains(e.String(), tc.stderr) {
			t.Errorf("%q: exit %d, want %d; stdout %.300q, want it to contain %.300q; stderr %q, want %q", tc.args, code, tc.code, o.String(), tc.stdout, e.String(), tc.stderr)
		}
	}
	got, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("--out wrote %d bytes (%v), want the %d of the reference", len(got), err, len(want))
	}
}
