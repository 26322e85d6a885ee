// Package review is `tcpxogen review`: the semantic summary
// (internal/releasediff) between the reviewed inputs, generated facts and
// goldens committed at a git revision and those of the working tree, for
// golden review in pull requests. It owns reading a revision's files from
// git objects; git is its run-time dependency (and only its: no other
// command needs git).
package review

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/internal/emit"
	"github.com/tcpxogen/tcpxogen/internal/excerpt"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/pipeline"
	"github.com/tcpxogen/tcpxogen/pipeline/releasediff"
	"github.com/tcpxogen/tcpxogen/runtimes"
)

// Result is a review's summary and the decisions the working tree lacks.
type Result struct {
	Summary string
	Missing []releasediff.Decision
	// Files are the repo-relative inputs, generated file and goldens that
	// differ between the revision and the working tree.
	Files []string
}

// InputError is a review that could not start: a revision git does not
// know, no git, a file that does not load (exit 2).
type InputError struct{ Err error }

func (e *InputError) Error() string  { return e.Err.Error() }
func (e *InputError) Unwrap() error  { return e.Err }
func (e *InputError) BadInput() bool { return true }

func bad(format string, a ...any) error { return &InputError{fmt.Errorf(format, a...)} }

// inputs are the reviewed files both sides load, repo-relative.
var inputs = []string{bom.RepoPath, bom.ReleasesRepoPath, bom.OverridesRepoPath, generated.FactsFile}

// Run compares revision base of the checkout at root with its working tree.
func Run(ctx context.Context, root, base string) (*Result, error) {
	if base == "" {
		base = "HEAD"
	}
	if strings.HasPrefix(base, "-") {
		return nil, bad("--base %s is not a revision (it starts with '-')", excerpt.Quote(base))
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, bad("review reads the base revision from git objects and needs git on PATH: install git (apt-get install git)")
	}
	commit, err := git(ctx, root, "rev-parse", "--verify", "--quiet", base+"^{commit}")
	if err != nil {
		return nil, bad("--base %s is not a commit of the repository at %s: %v (give a branch, tag or commit, e.g. --base main)", excerpt.Quote(base), root, err)
	}
	rev := strings.TrimSpace(string(commit))

	old := map[string][]byte{}
	for _, rel := range inputs {
		if old[rel], err = git(ctx, root, "show", rev+":"+rel); err != nil {
			return nil, bad("%s:%s: %v (review compares revisions that carry %s)", base, rel, err, strings.Join(inputs, ", "))
		}
	}
	oldSnap, err := snapshot(base+":", old)
	if err != nil {
		return nil, &InputError{err}
	}
	cur := map[string][]byte{}
	for _, rel := range inputs {
		if cur[rel], err = inputfile.Read(filepath.Join(root, filepath.FromSlash(rel)), inputfile.Spec{Max: inputfile.MaxSource}); err != nil {
			return nil, &InputError{err}
		}
	}
	newSnap, err := snapshot("", cur)
	if err != nil {
		return nil, &InputError{err}
	}

	// The goldens are the set `go generate` writes for the working tree's
	// facts; each is compared with its blob at the revision.
	// The gIB facts are the working tree's: review compares TCPXO releases,
	// and the base revision may predate the gIB fabric.
	gibSrc, err := inputfile.Read(filepath.Join(root, filepath.FromSlash(generated.GIBFactsFile)), inputfile.Spec{Max: inputfile.MaxSource})
	if err != nil {
		return nil, &InputError{fmt.Errorf("%w (run go generate ./...)", err)}
	}
	gib, err := emit.ParseLiteral(generated.GIBFactsFile, gibSrc)
	if err != nil {
		return nil, &InputError{err}
	}
	rendered, err := pipeline.Render(root, &runtimes.Inputs{Facts: *newSnap.Facts, GIB: *gib, BOM: newSnap.BOM, Releases: newSnap.Releases, Overrides: newSnap.Overrides})
	if err != nil {
		return nil, fmt.Errorf("list the goldens: %w", err)
	}
	var changed []string
	for _, rel := range inputs {
		if !bytes.Equal(old[rel], cur[rel]) {
			changed = append(changed, rel)
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(rendered)) {
		was, errOld := git(ctx, root, "show", rev+":"+rel)
		now, errNew := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if errOld != nil || errNew != nil || !bytes.Equal(was, now) {
			changed = append(changed, rel)
		}
	}
	slices.Sort(changed)
	rep := releasediff.Report{
		Title:     "tcpxogen review --base " + base,
		Old:       oldSnap,
		New:       newSnap,
		Files:     changed,
		CheckNote: "Not run by review: run `tcpxogen check` (make bom-check) on the working tree.",
	}
	return &Result{Summary: releasediff.Markdown(rep), Missing: releasediff.Missing(newSnap), Files: changed}, nil
}

// snapshot loads one side from its files; prefix names where they came
// from in errors ("HEAD:" for a revision, "" for the working tree).
func snapshot(prefix string, files map[string][]byte) (releasediff.Snapshot, error) {
	var s releasediff.Snapshot
	b, err := bom.Parse(prefix+bom.RepoPath, files[bom.RepoPath])
	if err != nil {
		return s, err
	}
	r, err := bom.ParseReleases(prefix+bom.ReleasesRepoPath, files[bom.ReleasesRepoPath])
	if err != nil {
		return s, err
	}
	o, err := bom.ParseOverrides(prefix+bom.OverridesRepoPath, files[bom.OverridesRepoPath])
	if err != nil {
		return s, err
	}
	var f *facts.Facts
	if f, err = emit.Parse(prefix+generated.FactsFile, files[generated.FactsFile]); err != nil {
		return s, err
	}
	return releasediff.Snapshot{Facts: f, BOM: b, Releases: r, Overrides: o}, nil
}

// git runs git in root and returns its stdout; its stderr, bounded, is the
// error.
func git(ctx context.Context, root string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", root}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				msg = fmt.Sprintf("git %s exited %d", args[0], ee.ExitCode())
			} else {
				msg = err.Error()
			}
		}
		return nil, errors.New(excerpt.Quote(msg))
	}
	return out, nil
}
