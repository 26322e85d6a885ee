package schema

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/runtimes"
)

// shippedManifests are the goldens tcpxogen ships: every emitted manifest
// must pass the API server's own validation with zero pruned fields.
func shippedManifests(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	rels := []string{runtimes.GoldenRuntime, runtimes.GoldenComponents, runtimes.GoldenRDMAComponents}
	for _, mt := range fabric.GIB.MachineTypeNames() {
		rels = append(rels, runtimes.GoldenRDMARuntime(mt))
	}
	for _, rel := range rels {
		data, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		out[rel] = data
	}
	return out
}

func TestShippedManifestsPass(t *testing.T) {
	v := mustTrainer(t)
	for rel, data := range shippedManifests(t) {
		reports, err := v.Validate(data)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		if len(reports) == 0 {
			t.Fatalf("%s: no objects", rel)
		}
		for _, r := range reports {
			if !r.OK() {
				t.Errorf("%s: %v", rel, r.Err())
			}
		}
	}
}
