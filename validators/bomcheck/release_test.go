package bomcheck

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/tcpxogen/tcpxogen/internal/imagesource"
	"github.com/tcpxogen/tcpxogen/internal/registrytest"
)

// TestWorkerCUDAConfirmedFromTheRegistry pushes worker images to a real
// registry and lets the release gate read their configs over HTTP: the
// worker's declared CUDA major is confirmed only by the image itself.
func TestWorkerCUDAConfirmedFromTheRegistry(t *testing.T) {
	reg := registrytest.Start(t)
	push := func(tag string, env ...string) string {
		t.Helper()
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		if img, err = mutate.Config(img, v1.Config{Env: env}); err != nil {
			t.Fatal(err)
		}
		ref, err := name.NewTag(reg.Host + "/pytorch/pytorch:" + tag)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return ref.Context().String() + "@" + d.String()
	}
	for _, tc := range []struct {
		name, tag string
		env       []string
		want      []string // fragments; "ok" alone means pass
	}{
		{"config says 12", "2.11.0-cuda12.8-cudnn9-runtime", []string{"CUDA_VERSION=12.8.1"}, []string{"ok", "CUDA_VERSION"}},
		{"config says 13", "2.11.0-cuda12.8-cudnn9-runtime", []string{"CUDA_VERSION=13.2.0"}, []string{"CUDA 13.2.0", "declares cudaMajor 12"}},
		{"tag only", "2.11.0-cuda12.8-cudnn9-runtime", nil, []string{"ok", "tag"}},
		{"nothing says", "2.11.0-runtime", nil, []string{"neither its config nor its tag"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := copyRepo(t)
			local := push(tc.tag, tc.env...)
			b := Load(root, Options{}).BOM
			// The BOM keeps its real worker reference; only the registry
			// host and digest are those of the image just pushed.
			edit(t, root, "bom/bom.yaml", b.Images.Worker.Reference, strings.Replace(local, reg.Host+"/pytorch/pytorch@", "pytorch/pytorch:"+tc.tag+"@", 1))
			edit(t, root, "bom/bom.yaml", "version: "+b.Images.Worker.Version, "version: "+tc.tag)
			opts := ReleaseOptions{
				Resolve: func(context.Context, string) error { return nil },
				WorkerConfig: func(ctx context.Context, ref string) (*v1.ConfigFile, error) {
					return imagesource.Config(ctx, local)
				},
			}
			r := result(RunRelease(context.Background(), root, opts), "worker-cuda-confirmed")
			pass := tc.want[0] == "ok"
			if (r.Status == Pass) != pass {
				t.Fatalf("status %v, want pass=%v: %+v", r.Status, pass, r)
			}
			for _, f := range tc.want[1:] {
				if !strings.Contains(r.Message+r.Fix, f) {
					t.Errorf("%+v lacks %q", r, f)
				}
			}
			if !pass && !strings.Contains(r.Message, tc.want[0]) {
				t.Errorf("%+v lacks %q", r, tc.want[0])
			}
		})
	}
}
