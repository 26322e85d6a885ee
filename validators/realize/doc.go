// Package realize shows what a Kubeflow Trainer runtime turns into: given a
// ClusterTrainingRuntime or TrainingRuntime and a TrainJob, Realize runs the
// trainer's own runtime framework in-process (against a fake API client) and
// returns exactly the objects the trainer controller would apply: the JobSet,
// plus whatever else the build writes (the MPI hostfile ConfigMap and SSH
// Secret, trainer v2.3.0's runtime snapshot ConfigMap).
//
// GPUDirect-TCPXO wiring that is dropped between runtime and pod produces no
// error, only a job that silently runs over TCP. wiring.Of and wiring.Diff compare
// the wiring of a runtime's pod template with the realized one, and the
// compatibility matrix (Cases, Matrix, the compat command) records, per
// trainer version, which TrainJob fields keep the wiring and which lose it.
//
// The wiring can be intact while the launch is wrong. JudgeLaunch checks
// what torchrun would do in the realized node container: the rendezvous
// variables the torch plugin injects, processes per node against the GPUs
// the container gets, and the node count the job asks for. Lint returns
// both verdicts for one TrainJob on the linked trainer. The sidecar hazards
// trainer v2.3.0 brought (runtime patches of the tcpxo-daemon,
// mlPolicy.torch.envInjection) are judged in hazards.go.
//
// # Trainer versions
//
// Every trainer version shares one module path, so a binary links exactly
// one; TrainerVersion says which, and every Result and report row carries
// it. The main go.mod pins v2.2.0. trainer-v2.3.0.mod (with its .sum) is the
// same module with trainer v2.3.0 and the dependency levels it needs; no
// code differs between the two versions, only the recorded expectations
// (knownBehaviors) and the embedded CRD defaults. The CLI is built once per
// version (bin/tcpxogen and bin/tcpxogen-trainer-v2.3.0), and each realizes
// its own; the matrix a build recorded (testdata/compat-<version>.json) is
// that build's regression test, never a verdict for another:
//
//	go test ./validators/realize/...
//	go test -modfile=validators/realize/trainer-v2.3.0.mod ./validators/realize/...
//
// # Generated files
//
// crddefaults/<version>.json holds the CRD default schemas Realize applies
// (see defaults.go) and testdata/compat-<version>.json the matrix report.
// `go generate ./...` writes both for every trainer version
// (generated/generate.go runs the compat command once per modfile); tests
// fail when either is stale. The compat command is tools/compat; run from
// the checkout, each build writes its own version's two files:
//
//	go run ./tools/compat --out validators/realize/testdata/compat-v2.2.0.json --crd-defaults validators/realize/crddefaults/v2.2.0.json
//	go run -modfile=validators/realize/trainer-v2.3.0.mod ./tools/compat --out validators/realize/testdata/compat-v2.3.0.json --crd-defaults validators/realize/crddefaults/v2.3.0.json
//
// The matrix realizes with the defaults embedded at build time, so when the
// defaults change (a new trainer version, say) the command writes them
// alone and fails, and a second run writes the report. Each suite's
// -update rewrites its own file too, per version, defaults first:
//
//	go test ./validators/realize -run TestCRDDefaultsMatchModule -update
//	go test ./validators/realize -run TestCompatReportCurrent -update
//
// and the same two with -modfile=validators/realize/trainer-v2.3.0.mod.
package realize
