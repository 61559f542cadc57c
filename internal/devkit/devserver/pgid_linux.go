package devserver

import "syscall"

// ownProcessGroup puts the server in a process group of its own, and has the kernel stop it if the
// process that started it dies without stopping it (a SIGKILL), so no server is left behind.
func ownProcessGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
