//go:build linux && (amd64 || arm64)

package fakegw

import "golang.org/x/sys/unix"

// Numbers of the system calls the hostile Perl programs make by number (perl's syscall), for the
// architecture the worker runs on.
const (
	sysAddKey = unix.SYS_ADD_KEY
	sysKeyctl = unix.SYS_KEYCTL
	sysMmap   = unix.SYS_MMAP
	sysRead   = unix.SYS_READ
)
