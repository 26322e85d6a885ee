package helm

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tcpxogen/tcpxogen/e2e/harness"
)

// The control plane (trainer present) of the install scenarios, started
// by the first one that needs it: the chart's offline scenarios run
// without it.
var (
	cpOnce sync.Once
	cp     *harness.ControlPlane
	cpErr  error
)

func controlPlane(t *testing.T) *harness.ControlPlane {
	t.Helper()
	cpOnce.Do(func() {
		start := time.Now()
		opts := harness.Options{}
		if os.Getenv("TCPXOGEN_E2E_LOG") != "" {
			opts.Log = os.Stderr
		}
		cp, cpErr = harness.Start(context.Background(), opts)
		fmt.Fprintf(os.Stderr, "control plane up in %s\n", time.Since(start).Round(time.Millisecond))
	})
	if cpErr != nil {
		t.Fatalf("starting the control plane: %v", cpErr)
	}
	return cp
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cp != nil {
		cp.Stop()
	}
	os.Exit(code)
}
