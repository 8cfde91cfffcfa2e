//go:build !linux

package childproc

import (
	"errors"
	"syscall"
)

// sysProcAttr has no parent-death signal here: a command outlives a
// coordctl killed with SIGKILL.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// groupAlive reports whether process group pgid has a member; zombies count.
func groupAlive(pgid int) bool { return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) }
