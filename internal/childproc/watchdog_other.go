//go:build !linux

package childproc

import (
	"fmt"
	"os"
	"time"
)

// Elsewhere than Linux there is no child subreaper: Start runs the command
// directly, as without Config.Watchdog.
const watchdogSupported = false

func monoNow() int64 { return time.Now().UnixNano() }

// WatchdogMain refuses: the watchdog needs Linux.
func WatchdogMain([]string) int {
	fmt.Fprintln(os.Stderr, "coordctl: __watchdog needs Linux")
	return 2
}
