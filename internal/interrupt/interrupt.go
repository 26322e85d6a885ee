// Package interrupt owns how tcpxogen answers SIGINT and SIGTERM (what a
// terminal's Ctrl-C, a CI runner and a Kubernetes Job send): the first
// cancels the command's context, so that its cleanup runs; a second exits at
// once, after printing what each running command reported it has left on a
// cluster and the command that removes it. It does not clean anything up
// itself: the commands do, on the cancelled context.
package interrupt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// ErrInterrupted is the cause of a context cancelled by a signal; the error
// names the signal.
var ErrInterrupted = errors.New("interrupted")

// ExitCode is the exit status after a second signal: the command failed.
const ExitCode = 1

// Signals are the signals handled.
var Signals = []os.Signal{os.Interrupt, syscall.SIGTERM}

type key struct{}

// registry holds the leftover reports of the running commands.
type registry struct {
	mu      sync.Mutex
	next    int
	reports map[int]func(io.Writer)
}

func (r *registry) report(w io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := 0; i < r.next; i++ {
		if f, ok := r.reports[i]; ok {
			f(w)
		}
	}
}

// Notify returns a context cancelled, with a cause wrapping ErrInterrupted,
// by the first SIGINT or SIGTERM, and messages on w saying so. The second
// signal prints every report registered with Leftovers to w and calls exit
// with ExitCode (os.Exit in the binary). stop releases the signals; call it
// when the command has returned.
func Notify(parent context.Context, w io.Writer, exit func(int)) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	reg := &registry{reports: map[int]func(io.Writer){}}
	ctx = context.WithValue(ctx, key{}, reg)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, Signals...)
	done := make(chan struct{})
	go func() {
		var first os.Signal
		select {
		case first = <-ch:
		case <-done:
			return
		}
		fmt.Fprintf(w, "tcpxogen: %s: stopping and cleaning up what this run created; a second signal exits at once and leaves it\n", name(first))
		cancel(fmt.Errorf("%w by %s", ErrInterrupted, name(first)))
		select {
		case s := <-ch:
			fmt.Fprintf(w, "tcpxogen: second signal (%s): exiting without cleaning up\n", name(s))
			reg.report(w)
			exit(ExitCode)
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
			cancel(nil)
		})
	}
}

func name(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// Leftovers registers report, which writes what the command has left on a
// cluster so far and how to remove it (nothing when it has left nothing), to
// be printed if a second signal ends the process before the command cleans
// up. The returned function unregisters it. Outside Notify's context (in
// tests) it does nothing. report runs on the signal's goroutine, so it must
// be safe alongside the command.
func Leftovers(ctx context.Context, report func(io.Writer)) (unregister func()) {
	reg, ok := ctx.Value(key{}).(*registry)
	if !ok {
		return func() {}
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	id := reg.next
	reg.next++
	reg.reports[id] = report
	return func() {
		reg.mu.Lock()
		defer reg.mu.Unlock()
		delete(reg.reports, id)
	}
}
