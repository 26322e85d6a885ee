//go:build unix

package atomicfile

import (
	"os"
	"syscall"
)

const syscallENOTDIR = syscall.ENOTDIR

// lockTemp takes an exclusive lock on a fresh temporary. The lock belongs to
// the open file, which the writer keeps until the rename, and the kernel
// drops it when the writer's process dies, however it dies: a temporary
// nobody holds was left by a killed writer.
func lockTemp(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) }

// abandoned reports whether no live writer holds the temporary at p.
func abandoned(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
