//go:build unix

package schema

import (
	"syscall"
	"time"
)

// processCPUTime is the CPU time this process has used, GC and all goroutines included. The
// benchmark reports it per operation because wall time on a shared machine measures the
// neighbours as much as the code.
func processCPUTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
