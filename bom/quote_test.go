package bom

import (
	"strings"
	"testing"
)

// A 900 KB value is quoted as a bounded excerpt in every problem about it,
// never whole (it was echoed about ten times: 9 MB of output), and a
// look-alike rune in it is named.
func TestProblemsQuoteBoundedExcerpts(t *testing.T) {
	huge := strings.Repeat("v", 900<<10)
	for name, doc := range map[string]string{
		"trainer version":   edit(t, testBOM, "  version: v2.2.0\n", "  version: "+huge+"\n"),
		"installer version": edit(t, testBOM, "    version: v1.0.15\n", "    version: "+huge+"\n"),
		"reference":         edit(t, testBOM, "reference: gke.gcr.io/pause:3.8@", "reference: gke.gcr.io/pause:3.8"+huge+"@"),
	} {
		_, err := Parse("bom.yaml", []byte(doc))
		if err == nil {
			t.Errorf("%s: a 900 KB value passed", name)
			continue
		}
		if n := len(err.Error()); n > 16<<10 {
			t.Errorf("%s: the error is %d bytes for a %d-byte value", name, n, len(huge))
		}
	}
	_, err := Parse("bom.yaml", []byte(edit(t, testBOM, "  version: v2.2.0\n", "  version: v2.2.\u0417\n")))
	if err == nil || !strings.Contains(err.Error(), "U+0417 CYRILLIC CAPITAL LETTER ZE") {
		t.Errorf("a look-alike in the trainer version is not named: %v", err)
	}
}
