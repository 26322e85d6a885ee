package lint

import "testing"

func TestLocate(t *testing.T) {
	data := []byte(`# a comment
apiVersion: v1
kind: A
---
---
kind: TrainJob
spec:
  trainer:
    numNodes: two
    env:
      - name: A
      - name: B
        value: x
`)
	// The empty document between the two separators is not counted, as
	// the schema proof's reader does not count it.
	lines := locate(data)
	for _, tc := range []struct {
		doc  int
		path string
		want int
	}{
		{1, "kind", 3},
		{2, "kind", 6},
		{2, "spec.trainer.numNodes", 9},
		{2, "spec.trainer.env", 10},
		{2, "spec.trainer.env[1]", 12},
		{2, "spec.trainer.env[1].value", 13},
		{2, "spec.trainer.env[7].name", 10}, // the deepest part the document has
		{2, "spec.trainer.command", 8},
		{2, "", 0},
	} {
		if got := lines.line(tc.doc, tc.path); got != tc.want {
			t.Errorf("document %d %q: line %d, want %d", tc.doc, tc.path, got, tc.want)
		}
	}
}
