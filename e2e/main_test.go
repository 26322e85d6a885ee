// The end-to-end scenarios run against one real control plane per test
// binary (package harness), started in TestMain; each scenario works in
// its own namespaces.
//
//	cd e2e && go test ./...
//
// Set TCPXOGEN_E2E_LOG=1 to see the components' logs.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tcpxogen/tcpxogen/e2e/harness"
	"github.com/tcpxogen/tcpxogen/e2e/scenario"
)

// cp is the control plane every scenario shares.
var cp *harness.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	start := time.Now()
	opts := harness.Options{}
	if os.Getenv("TCPXOGEN_E2E_LOG") != "" {
		opts.Log = os.Stderr
	}
	// The control plane outlives every test; Stop cancels it.
	var err error
	cp, err = harness.Start(context.Background(), opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the control plane: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "control plane up in %s\n", time.Since(start).Round(time.Millisecond))
	code := m.Run()
	stop := time.Now()
	cp.Stop()
	fmt.Fprintf(os.Stderr, "control plane stopped in %s\n", time.Since(stop).Round(time.Millisecond))
	return code
}

// documents splits multi-document YAML, dropping empty documents.
func documents(data []byte) [][]byte { return scenario.Documents(data) }
