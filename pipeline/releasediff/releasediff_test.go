package releasediff

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/runtimes"
)

// A change to an installer the release notes published earlier than the one
// it replaces is headed as a roll back; a move to a newer pair, or the same
// one, is not. The pairs and their dates are bom/releases.yaml's.
func TestRollBackIsNamed(t *testing.T) {
	root, err := bom.ResolveRoot("") // the checkout enclosing the test
	if err != nil {
		t.Fatal(err)
	}
	rel, err := bom.LoadReleases(filepath.Join(root, filepath.FromSlash(bom.ReleasesRepoPath)))
	if err != nil {
		t.Fatal(err)
	}
	published := rel.PublishedInstallers() // newest first
	if len(published) < 2 {
		t.Fatalf("bom/releases.yaml publishes %d installers; the test needs two", len(published))
	}
	newer, older := published[0], published[1]
	summary := func(from, to string) string {
		return Markdown(Report{
			Title: "t",
			Old:   Snapshot{Facts: &facts.Facts{PluginVersion: from}, Releases: rel},
			New:   Snapshot{Facts: &facts.Facts{PluginVersion: to}, Releases: rel},
		})
	}
	if s := summary(newer, older); !strings.Contains(s, "**ROLL BACK**: installer "+older+" was published on") {
		t.Errorf("%s → %s is not headed as a roll back:\n%.400s", newer, older, s)
	}
	for _, c := range [][2]string{{older, newer}, {newer, newer}} {
		if s := summary(c[0], c[1]); strings.Contains(s, "ROLL BACK") {
			t.Errorf("%s → %s is headed as a roll back", c[0], c[1])
		}
	}
}

// A change that rewrites the shipped runtime tells the reviewer that the
// TrainJobs already submitted keep their wiring (the trainer's runtime
// snapshot, or the running pods) and how to find them; a change that leaves
// the runtime as it is says nothing about them.
func TestSubmittedTrainJobsKeepTheirWiring(t *testing.T) {
	summary := func(files ...string) string {
		return Markdown(Report{Title: "t", Old: Snapshot{Facts: &facts.Facts{}}, New: Snapshot{Facts: &facts.Facts{}}, Files: files})
	}
	s := summary("bom/bom.yaml", runtimes.GoldenRuntime)
	for _, w := range []string{
		"### TrainJobs already submitted",
		"keep the wiring they were created with",
		"v2.3.0 and later from the runtime snapshot",
		"`<trainjob>-runtime-snapshot`",
		"on v2.2.0 in the pods already running",
		"Resubmit",
		"`tcpxogen check cluster` lists",
	} {
		if !strings.Contains(s, w) {
			t.Errorf("the summary of a runtime change lacks %q:\n%s", w, s)
		}
	}
	if i, j := strings.Index(s, "### TrainJobs already submitted"), strings.Index(s, "### Files rewritten"); i > j {
		t.Errorf("the section comes after the files rewritten:\n%s", s)
	}
	for _, files := range [][]string{nil, {"bom/releases.yaml"}} {
		if s := summary(files...); strings.Contains(s, "TrainJobs already submitted") {
			t.Errorf("files %v: the runtime did not change, yet the summary speaks of submitted TrainJobs:\n%s", files, s)
		}
	}
}
