package imagesource

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/tcpxogen/tcpxogen/internal/registrytest"
)

// Head answers a tag with the digest it points at and a digest with
// itself, through the shared client (its requests are counted).
func TestHeadResolvesTagsAndDigests(t *testing.T) {
	reg := registrytest.Start(t)
	img := testImage(t, 1)
	pinned := push(t, reg, "installer", img)
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	tag, _, _ := strings.Cut(pinned, "@")
	for _, ref := range []string{tag, pinned} {
		var stats Stats
		got, err := Head(context.Background(), ref, WithStats(&stats), fast)
		if err != nil || got != want {
			t.Errorf("Head(%s) = %s, %v; want %s", ref, got, err, want)
		}
		if stats.Snapshot().Requests == 0 {
			t.Errorf("Head(%s) made no request through the counted transport", ref)
		}
	}
}

func TestHeadOfAMissingTagSaysNotFound(t *testing.T) {
	reg := registrytest.Start(t)
	push(t, reg, "installer", testImage(t, 1))
	_, err := Head(context.Background(), reg.Ref("installer")+":v9", fast)
	mustContain(t, err, "manifest v9 not found in "+reg.Ref("installer"), "check the reference's repository and its tag or digest")
	var terr *transport.Error
	if !errors.As(err, &terr) || terr.StatusCode != http.StatusNotFound {
		t.Errorf("error %v does not wrap the 404", err)
	}
}

func TestHeadAndConfigExplainCredentials(t *testing.T) {
	reg := registrytest.Start(t)
	pinned := push(t, reg, "installer", testImage(t, 1))
	host := proxy(t, reg, func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("WWW-Authenticate", `Basic realm="tcpxogen-test"`)
		w.WriteHeader(http.StatusUnauthorized)
		return true
	}, nil)
	_, herr := Head(context.Background(), rehost(pinned, host), fast)
	_, cerr := Config(context.Background(), rehost(pinned, host), fast)
	for _, err := range []error{herr, cerr} {
		mustContain(t, err, "authentication to "+host+" failed (401 Unauthorized)", "gcloud auth configure-docker", "docker login", "GOOGLE_APPLICATION_CREDENTIALS")
		var terr *transport.Error
		if !errors.As(err, &terr) || terr.StatusCode != http.StatusUnauthorized {
			t.Errorf("error %v does not wrap the 401", err)
		}
	}
}

// Config reads the config of a pinned image, verified and cached as a
// source's: a second read from the cache needs no network.
func TestConfigReadsThePinnedImagesConfig(t *testing.T) {
	reg := registrytest.Start(t)
	img, err := mutate.Config(testImage(t, 2), v1.Config{Env: []string{"CUDA_VERSION=12.8.1"}})
	if err != nil {
		t.Fatal(err)
	}
	pinned := push(t, reg, "worker", img)
	cache := t.TempDir()
	for _, opts := range [][]Option{{WithCache(cache), fast}, {WithCache(cache), WithTransport(&offline{}), fast}} {
		cf, err := Config(context.Background(), pinned, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(cf.Config.Env, "CUDA_VERSION=12.8.1") {
			t.Errorf("config env %v lacks CUDA_VERSION=12.8.1", cf.Config.Env)
		}
	}
}

func TestConfigRefusesWhatItCannotVerify(t *testing.T) {
	reg := registrytest.Start(t)
	pinned := push(t, reg, "worker", testImage(t, 1))
	tag, _, _ := strings.Cut(pinned, "@")
	_, err := Config(context.Background(), tag, fast)
	mustContain(t, err, "has no digest", "tags can move")

	missing := tag + "@" + digestOf([]byte("not pushed")).String()
	_, err = Config(context.Background(), missing, fast)
	mustContain(t, err, missing, "not found", "check the reference's digest")

	var requests atomic.Int64
	_, err = Config(context.Background(), pinned, WithTransport(countAll{&requests, &offline{}}), fast)
	mustContain(t, err, "network disabled")
	if requests.Load() == 0 {
		t.Error("Config did not go through the transport it was given")
	}
}

type countAll struct {
	n     *atomic.Int64
	inner http.RoundTripper
}

func (c countAll) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.inner.RoundTrip(r)
}
