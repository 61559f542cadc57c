//go:build !(linux && (amd64 || arm64))

package fakegw

// Numbers of the system calls the hostile Perl programs make: none where the sandbox does not run;
// -1 makes perl's syscall fail.
const (
	sysAddKey = -1
	sysKeyctl = -1
	sysMmap   = -1
	sysRead   = -1
)
