package docgen

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is the checkout, four levels above this package.
var repoRoot = filepath.Join("..", "..")

var backquoted = regexp.MustCompile("`([^`]+)`")

// packageRow is one row of the package table of docs/design.md.
type packageRow struct {
	paths []string // the first cell's backquoted paths, without a trailing slash
	owns  string   // the second cell
}

// packageTable is the "## Packages" table of docs/design.md, which names
// every package directory (the README's "Layout" names only the top
// folders).
func packageTable(t *testing.T) []packageRow {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Packages\n")
	if !ok {
		t.Fatal(`docs/design.md has no "## Packages" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []packageRow
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| `") || len(cells) < 2 {
			continue
		}
		var r packageRow
		for _, m := range backquoted.FindAllStringSubmatch(cells[0], -1) {
			r.paths = append(r.paths, strings.TrimSuffix(m[1], "/"))
		}
		r.owns = strings.Join(cells[1:], " | ")
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		t.Fatal("docs/design.md's package table has no rows")
	}
	return rows
}

// goPackageDirs lists, slash-separated and relative to the checkout, every
// directory holding a non-test Go file, as the go command sees packages:
// testdata, hidden and _-prefixed directories are not part of the module's
// package tree, and neither are build outputs.
func goPackageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != repoRoot && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "out" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			rel, err := filepath.Rel(repoRoot, filepath.Dir(p))
			if err != nil {
				return err
			}
			if rel = filepath.ToSlash(rel); !slices.Contains(dirs, rel) {
				dirs = append(dirs, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no Go packages found under the checkout")
	}
	return dirs
}

// TestPackageTableNamesEveryPackage holds the package table of
// docs/design.md to the tree: every path it lists exists, and every Go
// package is either a row of its own or named, in backquotes, in the row of
// its nearest listed ancestor (tools/tcpxogen/internal/checkcmd as
// `checkcmd` in the tools/tcpxogen row).
func TestPackageTableNamesEveryPackage(t *testing.T) {
	rows := packageTable(t)
	for _, r := range rows {
		for _, p := range r.paths {
			if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(p))); err != nil {
				t.Errorf("the package table of docs/design.md lists %s: %v", p, err)
			}
		}
	}
	for _, dir := range goPackageDirs(t) {
		var best *packageRow
		bestLen := -1
		for i, r := range rows {
			for _, p := range r.paths {
				if (dir == p || strings.HasPrefix(dir, p+"/")) && len(p) > bestLen {
					best, bestLen = &rows[i], len(p)
				}
			}
		}
		switch {
		case best == nil:
			t.Errorf("package %s is under no path of the package table of docs/design.md", dir)
		case len(dir) == bestLen:
		case !strings.Contains(best.owns, "`"+path.Base(dir)+"`"):
			t.Errorf("package %s is not named in the row of %s in docs/design.md's package table: add `%s` to it, or a row of its own", dir, strings.Join(best.paths, ", "), path.Base(dir))
		}
	}
}

// TestDocsCiteOnlyFilesInTheRepository checks that every relative link of
// README.md and docs/*.md, and every Markdown file a Go comment names by
// itself, exists in the checkout: a citation of a file outside the
// repository (a ../shared/DESIGN.md) leaves a reader nothing to follow.
func TestDocsCiteOnlyFilesInTheRepository(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	link := regexp.MustCompile(`\]\(([^)\s#]+)(?:#[^)]*)?\)`)
	for _, page := range append(pages, filepath.Join(repoRoot, "README.md")) {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		// Code is not prose: a regular expression in backquotes is no link.
		prose := regexp.MustCompile("`[^`]*`").ReplaceAllString(string(data), "")
		for _, m := range link.FindAllStringSubmatch(prose, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			resolved := filepath.Join(filepath.Dir(page), filepath.FromSlash(target))
			rel, err := filepath.Rel(repoRoot, resolved)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(filepath.ToSlash(rel), "../") {
				t.Errorf("%s links %s, outside the repository", filepath.Base(page), target)
				continue
			}
			if _, err := os.Stat(resolved); err != nil {
				t.Errorf("%s links %s: %v", filepath.Base(page), target, err)
			}
		}
	}
	// Markdown files of this project are cited in Go comments by bare name
	// (README.md) or by their path from the checkout (docs/design.md);
	// upstream files are cited with their repository (owner/repo path).
	mdNames := map[string]bool{}
	var goFiles []string
	err = filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "out" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		switch {
		case strings.HasSuffix(p, ".md"):
			mdNames[d.Name()] = true
		case strings.HasSuffix(p, ".go"):
			goFiles = append(goFiles, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cited := regexp.MustCompile(`(?:^|[\s(,"])((?:docs/|testdata/)?[A-Za-z0-9_.-]+\.md)\b`)
	for _, f := range goFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			_, comment, ok := strings.Cut(line, "//")
			if !ok {
				continue
			}
			for _, m := range cited.FindAllStringSubmatch(comment, -1) {
				name := m[1]
				exists := mdNames[name]
				if strings.Contains(name, "/") {
					_, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(name)))
					exists = err == nil
				}
				if !exists {
					rel, err := filepath.Rel(repoRoot, f)
					if err != nil {
						t.Fatal(err)
					}
					t.Errorf("%s cites %s, which is not in the repository", rel, name)
				}
			}
		}
	}
}

// TestToolsHoldOnlyCommands holds the layout's one rule for tools/: it
// holds commands (main packages, one package per command, and under
// tools/internal/ the framework they share), and nothing outside it imports anything under it, so every
// library can serve runtimes/, validators/, bom/ and e2e/ alike.
func TestToolsHoldOnlyCommands(t *testing.T) {
	const module = "github.com/tcpxogen/tcpxogen"
	fset := token.NewFileSet()
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != repoRoot && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || d.Name() == "out" || d.Name() == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		rel, err := filepath.Rel(repoRoot, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		inTools := strings.HasPrefix(rel, "tools/")
		if inTools && !strings.HasSuffix(rel, "_test.go") {
			dir := path.Dir(rel)
			if pkg := f.Name.Name; pkg != "main" && !strings.HasPrefix(dir, "tools/internal/") && !strings.HasSuffix(pkg, "cmd") {
				t.Errorf("%s: package %s under tools/ is neither a command (main, or NAMEcmd under tools/tcpxogen/internal) nor the commands' framework (tools/internal/): move the library to internal/ or validators/", rel, pkg)
			}
		}
		for _, imp := range f.Imports {
			target, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if !inTools && strings.HasPrefix(target, module+"/tools/") {
				t.Errorf("%s imports %s: nothing outside tools/ may import a command", rel, target)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
