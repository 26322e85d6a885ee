package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// commandsDoc is the committed command reference, from this package.
var commandsDoc = filepath.Join("..", "..", "docs", "commands.md")

// TestCommandReferenceIsCurrent holds docs/commands.md to what the
// commands print: it lists every command and every subcommand, and it is
// byte for byte what `tcpxogen help --markdown` renders now, with nothing of
// the machine it was rendered on.
func TestCommandReferenceIsCurrent(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("TCPXOGEN_CACHE_DIR", cache)
	cmds := commands()
	ref, err := cli.Reference(cmds)
	if err != nil {
		t.Fatal(err)
	}
	page := string(ref)
	var want []string
	for name := range cmds {
		want = append(want, "## tcpxogen "+name)
	}
	// The subcommands, which the reference finds from their parents' help.
	for _, sub := range []string{"check cluster", "check trainjob", "render benchmark", "render components", "render goldens", "render policy", "render rbac", "render runtime"} {
		want = append(want, "### tcpxogen "+sub)
	}
	slices.Sort(want)
	for _, h := range want {
		if !strings.Contains(page, "\n"+h+"\n") {
			t.Errorf("the command reference has no section %q", h)
		}
	}

	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	checkout, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	machine := []string{cache, wd, checkout, os.TempDir()}
	if home, err := os.UserHomeDir(); err == nil && len(home) > 1 {
		machine = append(machine, home)
	}
	for _, v := range machine {
		if strings.Contains(page, v) {
			t.Errorf("the command reference holds %s, which is this machine's", v)
		}
	}

	committed, err := os.ReadFile(commandsDoc)
	if err != nil {
		t.Fatalf("%v: run go generate ./... (or go run ./tools/tcpxogen help --markdown --out docs/commands.md)", err)
	}
	if string(committed) != page {
		line := firstDifference(string(committed), page)
		t.Errorf("docs/commands.md is not what the commands print (first difference at line %d: %q, want %q): run go generate ./... (or go run ./tools/tcpxogen help --markdown --out docs/commands.md)",
			line+1, lineAt(string(committed), line), lineAt(page, line))
	}
}

func firstDifference(a, b string) int {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return i
		}
	}
	return min(len(al), len(bl))
}

func lineAt(s string, i int) string {
	lines := strings.Split(s, "\n")
	if i < len(lines) {
		return lines[i]
	}
	return "(end of file)"
}
