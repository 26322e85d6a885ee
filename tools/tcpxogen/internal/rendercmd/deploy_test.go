package rendercmd

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/runtimes/deploy"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// listed returns the files under dir, relative and sorted.
func listed(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func TestRenderChart(t *testing.T) {
	for fabric, want := range map[string][]string{
		"tcpxo": {"Chart.yaml", "templates/NOTES.txt", "templates/_helpers.tpl", "templates/components.yaml", "templates/nccl-tests-tcpxo.yaml", "templates/torch-distributed-tcpxo.yaml", "values.schema.json", "values.yaml"},
		"gib":   {"Chart.yaml", "templates/NOTES.txt", "templates/_helpers.tpl", "templates/components.yaml", "templates/torch-distributed-rdma-a3-ultragpu-8g.yaml", "templates/torch-distributed-rdma-a4-highgpu-8g.yaml", "values.schema.json", "values.yaml"},
	} {
		t.Run(fabric, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "chart")
			code, out, stderr := render(t, "chart", "--fabric", fabric, dir)
			if code != cli.ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if got := listed(t, dir); !slices.Equal(got, want) {
				t.Fatalf("render chart wrote %v, want %v", got, want)
			}
			if strings.Count(out, "\n") != len(want) {
				t.Errorf("stdout lists %d files, want %d:\n%s", strings.Count(out, "\n"), len(want), out)
			}
			var meta struct{ Name, Version, AppVersion string }
			data, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(data, &meta); err != nil {
				t.Fatal(err)
			}
			// A test binary records no version: the chart says so rather than
			// borrowing one.
			if meta.Name != "tcpxogen-"+fabric || meta.Version != "0.0.0-unknown" || meta.AppVersion != "unknown" {
				t.Errorf("Chart.yaml = %+v, want tcpxogen-%s 0.0.0-unknown (appVersion unknown)", meta, fabric)
			}
			// A second run changes nothing.
			if code, _, stderr := render(t, "chart", "--fabric", fabric, dir); code != cli.ExitOK || !strings.Contains(stderr, "0 changed") {
				t.Errorf("second run: exit %d: %s", code, stderr)
			}
		})
	}
}

func TestRenderKustomize(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "base")
	code, _, stderr := render(t, "kustomize", "--fabric", "tcpxo", "--interfaces", valid, "--node-selector", "pool=a3", dir)
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got, want := listed(t, dir), []string{"components.yaml", "kustomization.yaml", "torch-distributed-tcpxo.yaml"}; !slices.Equal(got, want) {
		t.Fatalf("render kustomize wrote %v, want %v", got, want)
	}
	// The runtime is render runtime's for the same flags, under the base's
	// header.
	code, rt, stderr := render(t, "runtime", "--interfaces", valid, "--node-selector", "pool=a3")
	if code != cli.ExitOK {
		t.Fatalf("render runtime: exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "torch-distributed-tcpxo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(data), "---\n"+rt) {
		t.Errorf("the base's runtime is not render runtime's output:\n%s", data)
	}
}

// TestRenderKustomizeGIB: the gIB base holds the runtime render runtime
// --fabric gib prints for each --machine-type (every one without it), from
// --interfaces or --values alike, under the base's header.
func TestRenderKustomizeGIB(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("rdmaInterfaces:\n"+
		"  - {interfaceName: eth9, network: rdma-7}\n  - {interfaceName: eth2, network: rdma-0}\n  - {interfaceName: eth3, network: rdma-1}\n"+
		"  - {interfaceName: eth4, network: rdma-2}\n  - {interfaceName: eth5, network: rdma-3}\n  - {interfaceName: eth6, network: rdma-4}\n"+
		"  - {interfaceName: eth7, network: rdma-5}\n  - {interfaceName: eth8, network: rdma-6}\n  - {interfaceName: eth1, network: gvnic-1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		mapping, asked []string
		types          []string
	}{
		{"every machine type, --interfaces", []string{"--interfaces", validRDMA}, nil, []string{"a3-ultragpu-8g", "a4-highgpu-8g"}},
		{"one machine type, --values with eth1", []string{"--values", values}, []string{"--machine-type", "a4-highgpu-8g"}, []string{"a4-highgpu-8g"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "base")
			args := slices.Concat([]string{"kustomize", "--fabric", "gib", "--node-selector", "pool=a4"}, tc.mapping, tc.asked)
			if code, _, stderr := render(t, append(args, dir)...); code != cli.ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			want := []string{"components.yaml", "kustomization.yaml"}
			for _, mt := range tc.types {
				want = append(want, "torch-distributed-rdma-"+mt+".yaml")
			}
			slices.Sort(want)
			if got := listed(t, dir); !slices.Equal(got, want) {
				t.Fatalf("render kustomize wrote %v, want %v", got, want)
			}
			for _, mt := range tc.types {
				code, rt, stderr := render(t, slices.Concat([]string{"runtime", "--fabric", "gib", "--machine-type", mt, "--node-selector", "pool=a4"}, tc.mapping)...)
				if code != cli.ExitOK {
					t.Fatalf("render runtime: exit %d: %s", code, stderr)
				}
				data, err := os.ReadFile(filepath.Join(dir, "torch-distributed-rdma-"+mt+".yaml"))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasSuffix(string(data), "---\n"+rt) {
					t.Errorf("the base's %s runtime is not render runtime's output:\n%s", mt, data)
				}
				if !strings.Contains(string(data), "# NO IMAGE: each TrainJob sets spec.trainer.image") {
					t.Errorf("the base's %s runtime does not say it has no image:\n%.600s", mt, data)
				}
			}
			code, comps, stderr := render(t, "components", "--fabric", "gib")
			if code != cli.ExitOK {
				t.Fatalf("render components: exit %d: %s", code, stderr)
			}
			data, err := os.ReadFile(filepath.Join(dir, "components.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(string(data), "---\n"+comps) {
				t.Errorf("the base's components are not render components --fabric gib's output:\n%s", data)
			}
		})
	}
}

// Bad usage and bad input exit 2, naming the flag or value, with nothing
// written.
func TestRenderChartAndKustomizeRefuse(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	supported := strings.Join(deploy.Names(), ", ")
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"chart: other fabric":                 {[]string{"chart", "--fabric", "rdma", "DIR"}, `--fabric: unknown fabric "rdma": use one of ` + supported},
		"chart: no fabric":                    {[]string{"chart", "DIR"}, "--fabric is required: want one of " + supported},
		"chart: no DIR":                       {[]string{"chart", "--fabric", "tcpxo"}, "the chart's directory, DIR"},
		"chart: DIR is a file":                {[]string{"chart", "--fabric", "gib", file}, "is not a directory"},
		"kustomize: other fabric":             {[]string{"kustomize", "--fabric", "rdma", "--interfaces", valid, "DIR"}, `--fabric: unknown fabric "rdma"`},
		"kustomize: no mapping":               {[]string{"kustomize", "--fabric", "tcpxo", "DIR"}, "eth1=<network>"},
		"kustomize: duplicate":                {[]string{"kustomize", "--fabric", "tcpxo", "--interfaces", strings.Replace(valid, "net-2", "net-1", 1), "DIR"}, "net-1"},
		"kustomize: unpinned worker":          {[]string{"kustomize", "--fabric", "tcpxo", "--interfaces", valid, "--worker-image", "pytorch/pytorch:latest", "DIR"}, "digest"},
		"kustomize: tcpxo machine type":       {[]string{"kustomize", "--fabric", "tcpxo", "--machine-type", "a3-megagpu-8g", "--interfaces", valid, "DIR"}, "--machine-type is for a fabric with a runtime per machine type (--fabric gib)"},
		"kustomize: gib no mapping":           {[]string{"kustomize", "--fabric", "gib", "DIR"}, "--interfaces: "},
		"kustomize: gib a TCPXO mapping":      {[]string{"kustomize", "--fabric", "gib", "--interfaces", valid, "DIR"}, "move each up one interface"},
		"kustomize: gib seven networks":       {[]string{"kustomize", "--fabric", "gib", "--interfaces", strings.TrimSuffix(validRDMA, ",eth9=rdma-7"), "DIR"}, "eth9 is not mapped"},
		"kustomize: gib both mappings":        {[]string{"kustomize", "--fabric", "gib", "--interfaces", validRDMA, "--values", file, "DIR"}, "give the mapping once"},
		"kustomize: gib A3 Mega":              {[]string{"kustomize", "--fabric", "gib", "--machine-type", "a3-megagpu-8g", "--interfaces", validRDMA, "DIR"}, `--machine-type: machine type "a3-megagpu-8g" is not served by the gib fabric: use a3-ultragpu-8g or a4-highgpu-8g`},
		"kustomize: gib a machine type twice": {[]string{"kustomize", "--fabric", "gib", "--machine-type", "a4-highgpu-8g", "--machine-type", "a4-highgpu-8g", "--interfaces", validRDMA, "DIR"}, "--machine-type: machine type a4-highgpu-8g is given twice"},
		"kustomize: gib unpinned worker":      {[]string{"kustomize", "--fabric", "gib", "--interfaces", validRDMA, "--worker-image", "nvcr.io/nvidia/pytorch:25.10-py3", "DIR"}, "digest"},
		"kustomize: gib empty values":         {[]string{"kustomize", "--fabric", "gib", "--values", file, "DIR"}, file},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			args := slices.Clone(tc.args)
			for i, a := range args {
				if a == "DIR" {
					args[i] = filepath.Join(dir, "out")
				}
			}
			code, out, stderr := render(t, args...)
			if code != cli.ExitUsage {
				t.Errorf("exit %d, want %d: %s", code, cli.ExitUsage, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, stderr)
			}
			if out != "" {
				t.Errorf("stdout: %q", out)
			}
			if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
				t.Errorf("something was written")
			}
		})
	}
}

// TestRenderChartIsTheCommittedChart: render chart writes the committed
// chart of each fabric (deploy/helm/<fabric>, a golden of go generate) but
// for the version Chart.yaml is stamped with.
func TestRenderChartIsTheCommittedChart(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := bom.FindRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range deploy.Names() {
		t.Run(name, func(t *testing.T) {
			f, err := deploy.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			committed := filepath.Join(root, filepath.FromSlash(f.ChartDir()))
			dir := filepath.Join(t.TempDir(), "chart")
			if code, _, stderr := render(t, "chart", "--fabric", name, "--root", root, dir); code != cli.ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			files := listed(t, dir)
			if want := listed(t, committed); !slices.Equal(files, want) {
				t.Fatalf("render chart wrote %v, the committed chart has %v", files, want)
			}
			for _, rel := range files {
				got, err := os.ReadFile(filepath.Join(dir, rel))
				if err != nil {
					t.Fatal(err)
				}
				want, err := os.ReadFile(filepath.Join(committed, rel))
				if err != nil {
					t.Fatal(err)
				}
				if rel == deploy.ChartFile {
					// The same metadata but for the version.
					var g, w map[string]any
					if err := yaml.Unmarshal(got, &g); err != nil {
						t.Fatal(err)
					}
					if err := yaml.Unmarshal(want, &w); err != nil {
						t.Fatal(err)
					}
					for _, k := range []string{"version", "appVersion"} {
						g[k], w[k] = nil, nil
					}
					if d := cmp.Diff(w, g); d != "" {
						t.Errorf("Chart.yaml differs from the committed one beyond its version (-committed +rendered):\n%s", d)
					}
					continue
				}
				if string(got) != string(want) {
					t.Errorf("%s differs from the committed %s", rel, filepath.Join(f.ChartDir(), rel))
				}
			}
		})
	}
}
