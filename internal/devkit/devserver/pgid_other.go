//go:build !linux && !windows

package devserver

import "syscall"

// ownProcessGroup puts the server in a process group of its own.
func ownProcessGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
