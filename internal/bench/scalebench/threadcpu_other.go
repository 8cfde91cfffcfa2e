//go:build !linux

package scalebench

import "time"

// threadCPU is 0 where Linux's RUSAGE_THREAD is not there (darwin has no
// per-thread rusage): the figures that use it read 0.
func threadCPU() time.Duration { return 0 }
