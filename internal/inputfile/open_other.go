//go:build !unix

package inputfile

import "os"

func openNonBlocking(path string) (*os.File, error) { return os.Open(path) }
