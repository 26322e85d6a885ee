package releasediff

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/internal/facts"
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
