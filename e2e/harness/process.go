package harness

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Process is a CLI run in the background whose stderr is read line by line
// as it comes, so a scenario can act at a given step (signal validate once
// it has created its TrainJob, or while it installs the trainer).
type Process struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	mu     sync.Mutex
	stderr strings.Builder
	lines  chan string
	done   chan struct{}
}

// StartProcess starts bin with args.
func StartProcess(t testing.TB, bin string, args ...string) *Process {
	t.Helper()
	p := &Process{cmd: exec.Command(bin, args...), lines: make(chan string, 1000), done: make(chan struct{})}
	p.cmd.Stdout = &p.stdout
	pipe, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
	}()
	return p
}

// Await waits for a stderr line containing s.
func (p *Process) Await(t testing.TB, s string, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case l := <-p.lines:
			if strings.Contains(l, s) {
				return
			}
		case <-p.done:
			t.Fatalf("%s ended before %q:\n%s", p.cmd.Args[1], s, p.Stderr())
		case <-deadline:
			t.Fatalf("no %q from %s in %s:\n%s", s, p.cmd.Args[1], within, p.Stderr())
		}
	}
}

// Signal sends sig to the process.
func (p *Process) Signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// Stderr is what the process wrote to stderr so far.
func (p *Process) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// Wait returns the exit code once the process has ended and its stderr is
// read.
func (p *Process) Wait(t testing.TB) int {
	t.Helper()
	<-p.done
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0
}
