package harness

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/tcpxogen/tcpxogen/validators/linkedtrainer"
)

// TrainerBuildTag is the build tag that selects the trainer v2.3.0 half of
// each version-split file pair (trainer_v2_2_0.go, trainer_v2_3_0.go).
const TrainerBuildTag = "trainer_v2_3_0"

// checkLinkedTrainer refuses a harness whose build tag and modfile
// disagree (the tag chooses the API calls, the modfile the trainer linked),
// and manifests read from another trainer version than the linked one
// (moduleDir is where the go command found the trainer module).
func checkLinkedTrainer(moduleDir string) error {
	if v := linkedtrainer.Version(); v != BuiltForTrainer {
		return fmt.Errorf("this harness is built for trainer %s but links trainer %s: build with -tags %s and -modfile=trainer-v2.3.0.mod together, or with neither (make e2e-v2.3.0 / make e2e)", BuiltForTrainer, v, TrainerBuildTag)
	}
	if want := "@" + BuiltForTrainer; !strings.HasSuffix(filepath.ToSlash(moduleDir), want) {
		return fmt.Errorf("the go command finds the trainer module at %s, not trainer %s's: run the tests from e2e/ with the modfile they were built with", moduleDir, BuiltForTrainer)
	}
	return nil
}

// modfileFlags are the flags that make a go command run inside this module
// read modFile: nothing for go.mod, else -modfile with the path resolved
// against the module's root (a test runs in its package's directory).
func modfileFlags() ([]string, error) {
	if modFile == "" {
		return nil, nil
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == "/dev/null" {
		return nil, fmt.Errorf("go env GOMOD: not inside the e2e module (run the tests from e2e/)")
	}
	return []string{"-modfile=" + filepath.Join(filepath.Dir(gomod), modFile)}, nil
}
