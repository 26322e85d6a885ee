package bom

import "testing"

// The built-in inputs load and pass the same checks as the checkout's, and
// errors about them say they came from the binary.
func TestLoadEmbedded(t *testing.T) {
	b, r, o, err := LoadEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	if b.Path != RepoPath+EmbeddedSuffix || o.Path != OverridesRepoPath+EmbeddedSuffix || len(r.PublishedInstallers()) == 0 {
		t.Errorf("LoadEmbedded: bom %q, overrides %q, %d published installers; want the repo paths marked as built in and the release table", b.Path, o.Path, len(r.PublishedInstallers()))
	}
}
