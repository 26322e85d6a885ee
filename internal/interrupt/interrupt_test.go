package interrupt

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv makes the test binary the signalled process of TestSignals.
const childEnv = "TCPXOGEN_INTERRUPT_CHILD"

// TestChild is the process TestSignals signals: it installs Notify as the
// binary does, registers a leftover report, says "ready", and on
// cancellation either cleans up at once (exit 0) or, as "hang", runs a
// cleanup that never ends, so only a second signal can end it.
func TestChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("run by TestSignals")
	}
	ctx, stop := Notify(context.Background(), os.Stderr, os.Exit)
	defer stop()
	Leftovers(ctx, func(w io.Writer) { fmt.Fprintln(w, "left on the cluster: TrainJob bench/x") })
	unregister := Leftovers(ctx, func(w io.Writer) { fmt.Fprintln(w, "an unregistered report") })
	unregister()
	fmt.Println("ready")
	<-ctx.Done()
	fmt.Println("cancelled:", context.Cause(ctx))
	if mode == "hang" {
		select {}
	}
	os.Exit(0)
}

func TestSignals(t *testing.T) {
	for _, c := range []struct {
		name    string
		mode    string
		signals []syscall.Signal
		code    int
		stdout  []string
		stderr  []string
		absent  []string
	}{
		{"SIGTERM cancels like SIGINT", "clean", []syscall.Signal{syscall.SIGTERM}, 0,
			[]string{"cancelled: interrupted by SIGTERM"}, []string{"tcpxogen: SIGTERM: stopping and cleaning up"}, []string{"left on the cluster"}},
		{"SIGINT cancels", "clean", []syscall.Signal{syscall.SIGINT}, 0,
			[]string{"cancelled: interrupted by SIGINT"}, []string{"tcpxogen: SIGINT: stopping"}, nil},
		{"a second signal exits at once with the leftovers", "hang", []syscall.Signal{syscall.SIGTERM, syscall.SIGINT}, ExitCode,
			[]string{"cancelled: interrupted by SIGTERM"}, []string{"second signal (SIGINT): exiting without cleaning up", "left on the cluster: TrainJob bench/x"}, []string{"an unregistered report"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), childEnv+"="+c.mode)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := make(chan string, 10)
			go func() {
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			var stdout []string
			await := func(prefix string) {
				t.Helper()
				for {
					select {
					case l, ok := <-lines:
						if !ok {
							t.Fatalf("the child ended before %q; stdout %q, stderr:\n%s", prefix, stdout, stderr.String())
						}
						stdout = append(stdout, l)
						if strings.HasPrefix(l, prefix) {
							return
						}
					case <-time.After(20 * time.Second):
						t.Fatalf("no %q from the child in 20 s", prefix)
					}
				}
			}
			await("ready")
			for i, s := range c.signals {
				if err := cmd.Process.Signal(s); err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					await("cancelled")
				}
			}
			for l := range lines {
				stdout = append(stdout, l)
			}
			err = cmd.Wait()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, c.code, stderr.String())
			}
			all := strings.Join(stdout, "\n")
			for _, w := range c.stdout {
				if !strings.Contains(all, w) {
					t.Errorf("stdout lacks %q: %q", w, all)
				}
			}
			for _, w := range c.stderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			for _, w := range c.absent {
				if strings.Contains(stderr.String(), w) {
					t.Errorf("stderr has %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}

// Outside Notify's context, Leftovers does nothing and its unregister is
// safe to call.
func TestLeftoversWithoutNotify(t *testing.T) {
	called := false
	Leftovers(context.Background(), func(io.Writer) { called = true })()
	if called {
		t.Error("a report ran without a signal")
	}
}
