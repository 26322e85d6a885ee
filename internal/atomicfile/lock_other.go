//go:build !unix

package atomicfile

import (
	"errors"
	"os"
)

// syscallENOTDIR never matches: other systems report a file in the path as
// not found, which Target handles.
var syscallENOTDIR = errors.New("not a directory")

func lockTemp(*os.File) {}

// abandoned is false: without a lock to tell a killed writer's temporary
// from a live one, none is removed.
func abandoned(string) bool { return false }
