package harness

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// processTB is the testing.TB the API server's test fixture wants, for use
// from TestMain, where no *testing.T exists yet. Logs go to w; a fatal error
// panics (Start recovers nothing: TestMain fails on it); cleanups run when
// the API server is torn down.
type processTB struct {
	w        io.Writer
	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

func newProcessTB(w io.Writer) *processTB { return &processTB{w: w} }

// Attr and Chdir are testing.TB's (Go 1.25 and 1.24), which
// k8s.io/kubernetes 1.36's ktesting.TB requires (1.35's does not). An
// attribute is reported as a log line, as testing does; Chdir changes the
// process's directory until the API server is torn down.
func (t *processTB) Attr(key, value string) {
	fmt.Fprintf(t.w, "=== ATTR %s %s %s\n", t.Name(), key, value)
}

func (t *processTB) Chdir(dir string) {
	old, err := os.Getwd()
	if err != nil {
		t.Fatalf("Chdir: %v", err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatalf("Chdir: %v", err)
	}
	t.Cleanup(func() {
		if err := os.Chdir(old); err != nil {
			t.Errorf("Chdir back to %s: %v", old, err)
		}
	})
}

func (t *processTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *processTB) cleanup() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

func (t *processTB) Error(args ...any) { t.Log(args...); t.Fail() }
func (t *processTB) Errorf(format string, args ...any) {
	t.Logf(format, args...)
	t.Fail()
}
func (t *processTB) Fail() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed = true
}
func (t *processTB) FailNow() {
	t.Fail()
	panic("control plane: fatal error in the API server fixture")
}
func (t *processTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}
func (t *processTB) Fatal(args ...any) { t.Log(args...); t.FailNow() }
func (t *processTB) Fatalf(format string, args ...any) {
	t.Logf(format, args...)
	t.FailNow()
}
func (t *processTB) Helper()                          {}
func (t *processTB) Log(args ...any)                  { fmt.Fprintln(t.w, args...) }
func (t *processTB) Logf(format string, args ...any)  { fmt.Fprintf(t.w, format+"\n", args...) }
func (t *processTB) Name() string                     { return "control-plane" }
func (t *processTB) Setenv(key, value string)         { os.Setenv(key, value) }
func (t *processTB) Skip(args ...any)                 { t.FailNow() }
func (t *processTB) SkipNow()                         { t.FailNow() }
func (t *processTB) Skipf(format string, args ...any) { t.FailNow() }
func (t *processTB) Skipped() bool                    { return false }
func (t *processTB) TempDir() string {
	d, err := os.MkdirTemp("", "tcpxogen-e2e")
	if err != nil {
		t.Fatalf("TempDir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}
