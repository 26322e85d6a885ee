// Package democmd implements `tcpxogen demo` (make demo): the whole pipeline
// offline on the bundled reconstruction, with a short summary for a
// newcomer. It writes only under --out and never touches the committed tree.
package democmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tcpxogen/tcpxogen/bom"
	"github.com/tcpxogen/tcpxogen/generated"
	"github.com/tcpxogen/tcpxogen/internal/atomicfile"
	"github.com/tcpxogen/tcpxogen/internal/fabric"
	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/inputfile"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/internal/wiring"
	"github.com/tcpxogen/tcpxogen/pipeline"
	"github.com/tcpxogen/tcpxogen/pipeline/extract"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/runtimes/shipped"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
	"github.com/tcpxogen/tcpxogen/validators/bomcheck"
	"github.com/tcpxogen/tcpxogen/validators/realize"
	"github.com/tcpxogen/tcpxogen/validators/schema"
)

// Commands returns the demo command set.
func Commands() cli.Commands {
	return cli.Commands{"demo": {Summary: "run the whole pipeline offline on the bundled reconstruction and summarise it", Run: run}}
}

// generatedOutput is the demo's copy of the emitted constants. It is not
// named *.go: out/demo/ lies inside the module, and a Go file there would
// make `go vet ./...` and `go test ./...` build the demo's output as a
// package of the repository.
const generatedOutput = "zz_generated.go.txt"

// state is what the steps hand each other and the summary reads.
type state struct {
	root, out string
	in        *runtimes.Inputs
	res       *extract.Result
	gib       facts.Facts
	runtime   *trainer.ClusterTrainingRuntime
	// gibRuntimes are the gIB runtimes, one per machine type.
	gibRuntimes []*trainer.ClusterTrainingRuntime
	files       map[string][]byte // out-relative path → content
	lines       []string          // summary lines
}

type step struct {
	name string
	run  func(context.Context, *state) error
}

var steps = []step{
	{"extract", stepExtract},
	{"render", stepRender},
	{"schema proof", stepSchema},
	{"realization proof", stepRealize},
	{"coupling check", stepCheck},
}

func run(ctx context.Context, args []string, s cli.Streams) error {
	fs := cli.NewFlags("demo", "demo [--root DIR] [--out DIR]", s)
	root := fs.String("root", "", "repository root (default: found upwards from the working directory)")
	out := fs.String("out", "out/demo", "where the demo writes its outputs, relative to --root")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	r, err := bom.ResolveRoot(*root)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	outDir := *out
	if !filepath.IsAbs(outDir) {
		outDir = filepath.Join(r, outDir)
	}
	st := &state{root: r, out: outDir, files: map[string][]byte{}}
	for i, stp := range steps {
		fmt.Fprintf(s.Err, "[%d/%d] %s\n", i+1, len(steps), stp.name)
		if err := stp.run(ctx, st); err != nil {
			return fmt.Errorf("%s: %w", stp.name, err)
		}
	}
	set := atomicfile.Set{}
	for rel, data := range st.files {
		set[filepath.Join(st.out, rel)] = data
	}
	if _, err := set.Commit(0o644); err != nil {
		return err
	}
	summary(s.Out, st)
	return nil
}

// stepExtract reads the bundled reconstruction exactly as `go generate`
// does and confirms it reproduces the committed constants.
func stepExtract(ctx context.Context, st *state) error {
	b, _, err := bom.LoadAll(filepath.Join(st.root, bom.RepoPath), filepath.Join(st.root, bom.ReleasesRepoPath))
	if err != nil {
		return err
	}
	spec, _ := extract.ParseSource(extract.SourceTestdata)
	run, err := pipeline.Run(ctx, pipeline.Config{Extract: extract.Config{Root: st.root, BOM: b, Source: spec}}, pipeline.Memory{})
	if err != nil {
		return err
	}
	st.res = run.Extract
	st.gib = run.Inputs.GIB
	code := run.Files[generated.FactsFile]
	st.files[generatedOutput] = code
	same := "matches"
	committed, err := inputfile.Read(filepath.Join(st.root, generated.FactsFile), inputfile.Spec{What: "generated file", Max: inputfile.MaxSource})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		same = "has no counterpart in"
	case err != nil:
		return err
	case !bytes.Equal(committed, code):
		same = "DIFFERS from"
	}
	f, sc := st.res.Facts, st.res.Scan
	st.lines = append(st.lines,
		fmt.Sprintf("installer   %s (read from %s; %d of %d layers, %d bytes)", f.PluginVersion, f.Provenance.Read, sc.LayersRead, sc.LayersTotal, sc.CompressedBytes),
		fmt.Sprintf("daemon      %s   NCCL %s   trainer %s", f.DaemonVersion, f.NCCLVersion, b.Trainer.Version),
		fmt.Sprintf("profiles    default %d variables, simple %d; sandbox refused %d command(s) (NIC discovery)", len(f.DefaultProfile), len(f.SimpleProfile), len(f.Refused)),
		fmt.Sprintf("constants   %s the committed %s", same, generated.FactsFile))
	g := st.gib
	var envs []string
	for _, m := range g.MachineProfiles {
		envs = append(envs, fmt.Sprintf("%s %d", m.MachineType, len(m.Env)))
	}
	st.lines = append(st.lines,
		fmt.Sprintf("gIB         installer %s, NCCL %s (read from %s; its layout and script are our BELIEF until read from the published image)", g.PluginVersion, g.NCCLVersion, g.Provenance.Read),
		fmt.Sprintf("gIB env     set_nccl_env.sh per machine type: %s variables; %d checker rules", strings.Join(envs, ", "), len(g.DefaultGuestRules)))
	return nil
}

func stepRender(_ context.Context, st *state) error {
	in, err := shipped.LoadInputs(st.root)
	if err != nil {
		return err
	}
	in.Facts = *st.res.Facts
	st.in = in
	if st.runtime, err = runtimes.TorchRuntime(in, runtimes.Options{Interfaces: runtimes.ExampleInterfaces()}); err != nil {
		return err
	}
	rt, err := runtimes.Encode(runtimes.FormatYAML, []string{"EXAMPLE network names; render yours with tcpxogen render runtime --interfaces ..."}, st.runtime)
	if err != nil {
		return err
	}
	st.files[names.Runtime+".yaml"] = rt
	env := st.runtime.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Env
	st.lines = append(st.lines, fmt.Sprintf("runtime     %s: %d env variables (the profile's %d, %d reviewed decisions applied), daemon sidecar, 8 GPU NICs",
		names.Runtime, len(env), len(st.res.Facts.DefaultProfile), len(in.Overrides.Overrides)))
	var objs []any
	for _, ds := range runtimes.Components(in) {
		objs = append(objs, ds)
	}
	comp, err := runtimes.Encode(runtimes.FormatYAML, nil, objs...)
	if err != nil {
		return err
	}
	st.files["components.yaml"] = comp
	in.GIB = st.gib
	for _, mt := range fabric.GIB.MachineTypeNames() {
		rt, err := runtimes.RDMARuntime(in, runtimes.RDMAOptions{Interfaces: runtimes.ExampleRDMAInterfaces(), MachineType: mt})
		if err != nil {
			return err
		}
		st.gibRuntimes = append(st.gibRuntimes, rt)
		if st.files[rt.Name+".yaml"], err = runtimes.Encode(runtimes.FormatYAML, []string{"EXAMPLE network names; render yours with tcpxogen render runtime --fabric gib --machine-type " + mt + " --interfaces ..."}, rt); err != nil {
			return err
		}
	}
	objs = nil
	for _, ds := range runtimes.RDMAComponents(in) {
		objs = append(objs, ds)
	}
	if st.files["components-rdma.yaml"], err = runtimes.Encode(runtimes.FormatYAML, nil, objs...); err != nil {
		return err
	}
	st.lines = append(st.lines, fmt.Sprintf("gIB runtime %d runtimes, one per machine type (%s): the script's env as direct env, 8 RDMA NICs eth2..eth9; nccl-rdma-installer", len(st.gibRuntimes), strings.Join(fabric.GIB.MachineTypeNames(), ", ")))
	return nil
}

func stepSchema(_ context.Context, st *state) error {
	v, err := schema.NewTrainer()
	if err != nil {
		return err
	}
	n := 0
	rels := []string{names.Runtime + ".yaml", "components.yaml", "components-rdma.yaml"}
	for _, rt := range st.gibRuntimes {
		rels = append(rels, rt.Name+".yaml")
	}
	for _, rel := range rels {
		reports, err := v.Validate(st.files[rel])
		if err != nil {
			return err
		}
		for _, r := range reports {
			if !r.OK() {
				return r.Err()
			}
			n++
		}
	}
	st.lines = append(st.lines, fmt.Sprintf("schema      %d objects pass the API server's validation against the trainer CRDs, 0 pruned fields", n))
	return nil
}

// sampleGIBImage is the sample gIB TrainJob's image: gIB v1.1.2's notes
// require a CUDA 13 runtime, and the runtime ships no image.
const sampleGIBImage = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime@sha256:0000000000000000000000000000000000000000000000000000000000000000"

// sampleTrainJob is what a user would write: a name, the runtime, a command.
func sampleTrainJob() *trainer.TrainJob {
	return &trainer.TrainJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind},
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default"},
		Spec: trainer.TrainJobSpec{
			RuntimeRef: trainer.RuntimeRef{Name: names.Runtime},
			Trainer:    &trainer.Trainer{NumNodes: ptr.To[int32](2), Command: []string{"torchrun", "train.py"}},
		},
	}
}

func stepRealize(ctx context.Context, st *state) error {
	res, err := realize.Realize(ctx, st.runtime, sampleTrainJob())
	if err != nil {
		return err
	}
	rtPod, err := wiring.RuntimePodTemplate(st.runtime, runtimes.NodeContainer)
	if err != nil {
		return err
	}
	jsPod, err := wiring.JobSetPodTemplate(res.JobSet, runtimes.NodeContainer)
	if err != nil {
		return err
	}
	lost := 0
	for _, c := range wiring.Diff(wiring.Of(rtPod, runtimes.NodeContainer), wiring.Of(jsPod, runtimes.NodeContainer)) {
		if !c.IsAddition() {
			lost++
		}
	}
	if lost > 0 {
		return fmt.Errorf("the sample TrainJob lost %d element(s) of the wiring", lost)
	}
	js, err := runtimes.Encode(runtimes.FormatYAML, nil, res.JobSet)
	if err != nil {
		return err
	}
	st.files["jobset.yaml"] = js
	st.lines = append(st.lines, fmt.Sprintf("realized    TrainJob demo -> JobSet %s on trainer %s: wiring intact", res.JobSet.Name, res.TrainerVersion))
	// A gIB TrainJob that replaces the command keeps the script's env: it
	// is direct env, which the trainer merges by name.
	for _, rt := range st.gibRuntimes {
		// A gIB TrainJob brings its image (the runtime ships none): one
		// built for the CUDA the gIB release requires. The digest is a
		// sample's, never pulled.
		job := sampleTrainJob()
		job.Spec.RuntimeRef.Name = rt.Name
		job.Spec.Trainer.Image = ptr.To(sampleGIBImage)
		v, err := realize.LintWith(ctx, rt, job, fabric.GIBRules, st.gib.GuestRules(st.gib.ProfileNames()[0]))
		if err != nil {
			return err
		}
		for _, c := range slices.Concat(v.Changes, v.Images) {
			if c.LosesFabric() {
				return fmt.Errorf("the sample gIB TrainJob on %s: %s: %s", rt.Name, c.Change, c.Reason)
			}
		}
	}
	st.lines = append(st.lines, fmt.Sprintf("realized    the same TrainJob, with its CUDA 13 image, on each of the %d gIB runtimes: command replaced, gIB env intact", len(st.gibRuntimes)))
	return nil
}

func stepCheck(ctx context.Context, st *state) error {
	rep := bomcheck.Run(ctx, st.root, bomcheck.Options{Reproduce: pipeline.Reproduce})
	var b bytes.Buffer
	rep.Write(&b, "bom-check")
	st.files["bom-check.txt"] = b.Bytes()
	passed, empty := 0, 0
	for _, r := range rep.Results {
		switch r.Status {
		case bomcheck.Pass:
			passed++
		case bomcheck.Empty:
			empty++
		}
	}
	if rep.Failed() {
		return fmt.Errorf("bom-check failed:\n%s", b.String())
	}
	line := fmt.Sprintf("bom-check   %d of %d checks passed", passed, len(rep.Results))
	if empty > 0 {
		line += fmt.Sprintf(", %d with nothing to compare yet", empty)
	}
	st.lines = append(st.lines, line)
	if rep.Substitute != "" {
		st.lines = append(st.lines, "provenance  the data came from the bundled reconstruction, a SUBSTITUTE: release-check refuses it")
	}
	return nil
}

func summary(w io.Writer, st *state) {
	fmt.Fprintln(w, "tcpxogen demo: the pipeline ran offline on the bundled reconstruction")
	for _, l := range st.lines {
		fmt.Fprintln(w, "  "+l)
	}
	rel, err := filepath.Rel(st.root, st.out)
	if err != nil {
		rel = st.out
	}
	if st.in != nil {
		if newer := st.in.Releases.NewerPairs(st.in.BOM.Images.Installer.Version); len(newer) > 0 {
			pairs := make([]string, len(newer))
			for i, p := range newer {
				pairs[i] = fmt.Sprintf("%s <-> daemon %s (%s)", p.Installer, p.Daemon, p.Date)
			}
			fmt.Fprintf(w, "  newer       published pairs: %s; the BOM stays on %s until their digests are read from the registry: tcpxogen bump --installer %s (rehearse offline with --source testdata)\n",
				strings.Join(pairs, ", "), st.in.BOM.Images.Installer.Version, newer[0].Installer)
		}
	}
	fmt.Fprintf(w, "  outputs     %s/ (%s)\n", rel, strings.Join(slices.Sorted(maps.Keys(st.files)), ", "))
}
