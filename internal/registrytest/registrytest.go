// Package registrytest runs a real OCI registry (Debian's docker-registry,
// distribution 2.8) on 127.0.0.1 for tests and benchmarks, so image code is
// exercised through go-containerregistry's real remote path instead of an
// in-process fake that would share the code under test's assumptions. It
// owns the server's lifecycle and its request log, not what is pushed to it.
package registrytest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Binary is where Debian's docker-registry package installs the server.
const Binary = "/usr/bin/docker-registry"

// binary is Binary, replaceable so the missing-binary path can be tested.
var binary = Binary

// installHint tells a developer how to get the binary; a missing registry is
// an environment problem the test cannot work around, so it fails, never skips.
const installHint = "install it with `sudo apt-get install docker-registry` (Debian/Ubuntu package, distribution 2.8)"

// startTimeout bounds how long a registry may take to come up. It is a guard
// against a wedged process, not a performance assertion: the registry
// normally answers /v2/ within 50 ms.
const startTimeout = 60 * time.Second

var listeningRE = regexp.MustCompile(`listening on (127\.0\.0\.1:[0-9]+)`)

// Registry is a running docker-registry process.
type Registry struct {
	// Host is 127.0.0.1:PORT; go-containerregistry speaks plain HTTP to it
	// without extra options because the host is a loopback address.
	Host string
	// Root is the filesystem storage root.
	Root string
	// LogPath is the file receiving the registry's log output.
	LogPath string

	cmd     *exec.Cmd
	confDir string
	waited  chan struct{}
	waitErr error
	stopMu  sync.Mutex
	stopped bool
}

// Start runs a registry storing into a fresh temporary directory and stops
// it when the test ends. A missing binary fails the test with an install hint.
func Start(tb testing.TB) *Registry {
	tb.Helper()
	r, stop, err := StartProcess(tb.TempDir())
	if err != nil {
		tb.Fatalf("registrytest: %v", err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("registrytest: registry log (%s):\n%s", r.LogPath, r.logTail(8<<10))
		}
		if err := stop(); err != nil {
			tb.Errorf("registrytest: stop registry: %v", err)
		}
	})
	return r
}

// StartProcess runs a registry storing into root (created if needed) and
// returns it with a function that stops it. It is Start without
// testing.TB, for benchmark commands. The config and log live in a private
// temporary directory that stop removes; the storage in root is kept.
func StartProcess(root string) (*Registry, func() error, error) {
	if _, err := os.Stat(binary); err != nil {
		return nil, nil, fmt.Errorf("docker-registry not found at %s (%w): %s", binary, err, installHint)
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, nil, fmt.Errorf("resolve registry storage root: %w", err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, nil, fmt.Errorf("create registry storage root: %w", err)
	}
	confDir, err := os.MkdirTemp("", "registrytest-")
	if err != nil {
		return nil, nil, fmt.Errorf("create registry config directory: %w", err)
	}
	r, err := start(root, confDir)
	if err != nil {
		os.RemoveAll(confDir)
		return nil, nil, err
	}
	return r, r.stop, nil
}

func start(root, confDir string) (*Registry, error) {
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("generate registry http secret: %w", err)
	}
	confPath := filepath.Join(confDir, "config.yml")
	if err := os.WriteFile(confPath, []byte(config(root, hex.EncodeToString(secret))), 0o600); err != nil {
		return nil, fmt.Errorf("write registry config: %w", err)
	}
	logPath := filepath.Join(confDir, "registry.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create registry log: %w", err)
	}

	cmd := exec.Command(binary, "serve", confPath)
	// The packaged default config (port 5000, htpasswd) must not leak in
	// through the environment; clear the variables that override ours.
	cmd.Env = filteredEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("registry stderr pipe: %w", err)
	}
	cmd.Stdout = logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", binary, err)
	}

	r := &Registry{Root: root, LogPath: logPath, cmd: cmd, confDir: confDir, waited: make(chan struct{})}
	// The log must be drained for the whole life of the process: a full pipe
	// would block the registry's logger and hang every request.
	hostCh := make(chan string, 1)
	copyDone := make(chan struct{})
	go func() {
		defer close(copyDone)
		defer logFile.Close()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		found := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logFile, line)
			if !found {
				if m := listeningRE.FindStringSubmatch(line); m != nil {
					found = true
					hostCh <- m[1]
				}
			}
		}
		// Keep draining if a line exceeded the scanner's limit.
		io.Copy(logFile, stderr)
	}()
	go func() {
		<-copyDone
		r.waitErr = cmd.Wait()
		close(r.waited)
	}()

	fail := func(err error) (*Registry, error) {
		r.stop()
		return nil, fmt.Errorf("%w; registry log:\n%s", err, r.logTail(4<<10))
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	select {
	case r.Host = <-hostCh:
	case <-r.waited:
		return fail(fmt.Errorf("docker-registry exited before listening: %v", r.waitErr))
	case <-ctx.Done():
		return fail(fmt.Errorf("docker-registry did not log its listen address within %s", startTimeout))
	}
	if err := r.waitReady(ctx); err != nil {
		return fail(err)
	}
	return r, nil
}

func config(root, secret string) string {
	return fmt.Sprintf(`version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: %q
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: 127.0.0.1:0
  secret: %q
`, root, secret)
}

func filteredEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "REGISTRY_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// waitReady polls GET /v2/ because the listen line is logged just before
// the server starts accepting; it gives up when ctx ends or the registry
// exits.
func (r *Registry) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: 5 * time.Second}
	url := "http://" + r.Host + "/v2/"
	var last error
	err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		select {
		case <-r.waited:
			return false, fmt.Errorf("docker-registry exited while starting: %v (last probe: %v)", r.waitErr, last)
		default:
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true, nil
			}
			err = fmt.Errorf("GET %s: status %s", url, resp.Status)
		}
		last = err
		return false, nil
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("docker-registry at %s did not answer GET /v2/ within %s: %w", r.Host, startTimeout, last)
	}
	return err
}

func (r *Registry) stop() error {
	r.stopMu.Lock()
	defer r.stopMu.Unlock()
	if r.stopped {
		return nil
	}
	r.stopped = true
	var errs []error
	select {
	case <-r.waited:
	default:
		if err := r.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			errs = append(errs, fmt.Errorf("kill docker-registry (pid %d): %w", r.cmd.Process.Pid, err))
		}
		<-r.waited
	}
	if err := os.RemoveAll(r.confDir); err != nil {
		errs = append(errs, fmt.Errorf("remove registry config directory: %w", err))
	}
	return errors.Join(errs...)
}

// logTail returns at most n trailing bytes of the log, for failure reports.
func (r *Registry) logTail(n int) string {
	b, err := os.ReadFile(r.LogPath)
	if err != nil {
		return fmt.Sprintf("(log unavailable: %v)", err)
	}
	if len(b) > n {
		b = b[len(b)-n:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// Ref returns HOST/repo, the repository reference for a name in this registry.
func (r *Registry) Ref(repo string) string { return r.Host + "/" + repo }

// BlobPath is the data file of a blob in the filesystem storage driver's
// layout, so tests can corrupt stored content behind the registry's back
// (the registry serves the file as is, without re-hashing it).
func (r *Registry) BlobPath(digest v1.Hash) string {
	hx := digest.Hex
	prefix := hx
	if len(prefix) > 2 {
		prefix = prefix[:2]
	}
	return filepath.Join(r.Root, "docker", "registry", "v2", "blobs", digest.Algorithm, prefix, hx, "data")
}
