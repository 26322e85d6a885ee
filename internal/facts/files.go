package facts

import (
	"path"
	"slices"
	"strings"
)

// interpreters are the shells an entrypoint may run a script through.
var interpreters = map[string]bool{"bash": true, "sh": true, "/bin/bash": true, "/bin/sh": true, "/usr/bin/bash": true}

// IsInterpreter says whether an entrypoint's first element is a shell that
// runs the script named next, whatever that script's mode.
func IsInterpreter(arg string) bool { return interpreters[arg] }

// ReferencedPluginFiles lists the file names profile values point at inside
// libDir (tuner and guest configs), plus the tuner plugin, which NCCL loads
// by bare name from the library path. libnccl* is NCCL core, not a plugin.
func ReferencedPluginFiles(libDir string, profiles ...[]EnvVar) []string {
	var names []string
	for _, vars := range profiles {
		for _, v := range vars {
			if v.Name == "NCCL_TUNER_PLUGIN" && !strings.Contains(v.Value, "/") && v.Value != "" {
				names = append(names, v.Value)
			}
			for _, elem := range strings.FieldsFunc(v.Value, func(r rune) bool { return r == ':' || r == ',' }) {
				if dir, name := path.Split(elem); path.Clean(dir) == libDir && name != "" {
					names = append(names, name)
				}
			}
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(names)))
}
