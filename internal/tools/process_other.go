//go:build unix && !linux

package tools

import "syscall"

// sysProcAttr puts a command in its own process group, so it can be stopped as a whole. There is
// no parent-death signal outside Linux: a command outlives a worker that is killed outright.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// groupAlive reports whether any process is in the process group.
func groupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) != syscall.ESRCH
}
