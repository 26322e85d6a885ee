package realize

import "github.com/tcpxogen/tcpxogen/validators/linkedtrainer"

// TrainerModule is the Go module path of Kubeflow Trainer. Every trainer
// version shares it, which is why two versions can never be linked into one
// binary and the v2.3.0 suite runs from a second modfile.
const TrainerModule = linkedtrainer.Module

// UnknownVersion is what TrainerVersion reports when the binary carries no
// module build information (for example a binary built outside module mode).
const UnknownVersion = linkedtrainer.UnknownVersion

// TrainerVersion returns the version of the Kubeflow Trainer module linked
// into this binary, for example "v2.2.0". Results and reports carry it so a
// statement such as "resourcesPerNode drops the GPU limit" always says which
// trainer it describes (see linkedtrainer.Version).
func TrainerVersion() string { return linkedtrainer.Version() }
