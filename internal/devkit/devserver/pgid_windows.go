package devserver

import "syscall"

// ownProcessGroup starts the server in a process group of its own.
func ownProcessGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}
