package bump

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/pipeline/review"
)

// gitRepo makes the copy of the checkout a git repository with one commit.
func gitRepo(t *testing.T, root string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("review needs git: install git")
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "base"},
	} {
		cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// withoutSections drops the title line and the named sections of a summary.
func withoutSections(s string, names ...string) string {
	var out []string
	skip := false
	for i, line := range strings.Split(s, "\n") {
		if i == 0 {
			continue
		}
		if strings.HasPrefix(line, "### ") {
			skip = false
			for _, n := range names {
				skip = skip || line == "### "+n
			}
		}
		if !skip {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// TestReviewAfterBumpShowsTheSameChanges: `review --base HEAD` on a bumped
// working tree reads HEAD's files from git objects and renders the same
// summary bump printed, section for section (only the title and bom-check,
// which review does not run, differ).
func TestReviewAfterBumpShowsTheSameChanges(t *testing.T) {
	root := copyCheckout(t)
	gitRepo(t, root)
	res, err := Run(ctx, Config{Root: root, Installer: "v1.0.17", Source: mustSpec(t, "testdata"), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := review.Run(ctx, root, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rev.Summary, "## tcpxogen review --base HEAD\n") {
		t.Fatalf("review title: %.80q", rev.Summary)
	}
	if got, want := withoutSections(rev.Summary, "bom-check"), withoutSections(res.Summary, "bom-check"); got != want {
		t.Fatalf("review differs from bump's summary:\n--- review\n%s\n--- bump\n%s", got, want)
	}
	if len(rev.Missing) != 0 {
		t.Errorf("review finds decisions missing: %v", rev.Missing)
	}
	// An unchanged tree reviews as no change.
	clean := copyCheckout(t)
	gitRepo(t, clean)
	same, err := review.Run(ctx, clean, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Installer v1.0.15 → v1.0.15, daemon v1.0.21 → v1.0.21.", "No variable added, removed or changed"} {
		if !strings.Contains(same.Summary, w) {
			t.Errorf("review of a clean tree lacks %q", w)
		}
	}
	if strings.Contains(same.Summary, "### Files rewritten") || strings.Contains(same.Summary, "**changed**") {
		t.Errorf("review of a clean tree reports changes:\n%s", same.Summary)
	}
}

// TestReviewRefusesABadBase: a revision git does not know, or one that
// looks like a flag, is bad input naming --base and the fix.
func TestReviewRefusesABadBase(t *testing.T) {
	root := copyCheckout(t)
	gitRepo(t, root)
	for base, want := range map[string]string{
		"no-such-branch":  `--base "no-such-branch" is not a commit`,
		"--output=/tmp/x": `--base "--output=/tmp/x" is not a revision`,
	} {
		_, err := review.Run(ctx, root, base)
		var ie *review.InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), want) || len(err.Error()) > 1024 {
			t.Errorf("--base %s: %v, want bad input containing %q", base, err, want)
		}
	}
	if _, err := review.Run(ctx, t.TempDir(), "HEAD"); err == nil || !strings.Contains(err.Error(), "--base") {
		t.Errorf("review outside a git repository: %v", err)
	}
}
