//go:build !unix

package schema

import "time"

func processCPUTime() (time.Duration, bool) { return 0, false }
