//go:build linux && amd64

package sandbox

import "golang.org/x/sys/unix"

// nativeArch is the audit architecture of the syscalls the filter knows.
const nativeArch = unix.AUDIT_ARCH_X86_64

// x32Bit marks the syscall numbers of the x32 ABI, which share amd64's architecture value.
const x32Bit = 0x40000000

// legacyModeCalls are amd64's older mode-setting calls.
var legacyModeCalls = []modeCall{
	{unix.SYS_CHMOD, 1, false},
	{unix.SYS_OPEN, 2, false},
	{unix.SYS_CREAT, 1, false},
	{unix.SYS_MKDIR, 1, false},
	{unix.SYS_MKNOD, 1, true},
}
