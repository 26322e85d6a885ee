//go:build unix

package inputfile

import (
	"os"
	"syscall"
)

// openNonBlocking opens path so that a FIFO swapped in after the Stat cannot
// block the open; for a regular file O_NONBLOCK changes nothing.
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
