// Package buildinfo says which build of tcpxogen is running: the module
// version a `go install …@VERSION` records, else the VCS revision a build
// from a checkout records (with -dirty when the tree had changes), read
// from the binary's own build information so it cannot disagree with the
// code that runs.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Unknown is the version of a build that recorded neither a module version
// nor a revision (go build -buildvcs=false, or a test binary).
const Unknown = "unknown"

// Version returns the running binary's version.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Unknown
	}
	return FromBuildInfo(info)
}

// FromBuildInfo is Version for a given build information.
func FromBuildInfo(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return Unknown
	}
	// Twelve hex digits, as Go's pseudo-versions abbreviate a revision.
	if len(rev) > 12 && !strings.ContainsAny(rev[:12], "/ ") {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return "devel+" + rev
}
