package busbw

import (
	"testing"

	"github.com/tcpxogen/tcpxogen/internal/fabric"
)

// nccl-report judges exactly the registry's fabrics: one list of fabrics.
func TestFabricTableIsTheRegistrys(t *testing.T) {
	for _, name := range fabric.Names() {
		f, err := LookupFabric(name)
		if err != nil || f.Name != name {
			t.Errorf("LookupFabric(%s) = %+v, %v", name, f.Name, err)
		}
	}
	if len(fabrics) != len(fabric.Names()) {
		t.Errorf("%d log-rule entries for %d fabrics", len(fabrics), len(fabric.Names()))
	}
}
