//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The syscall filter every command runs under. The mount view already keeps a setuid, setgid or
// device file from working inside (every mount is nosuid and nodev); the filter keeps a command
// from making one at all, so none appears on the host's disk in the work directory or the cache,
// where someone outside could run it. Capabilities are gone too, so file capabilities
// (security.capability) cannot be set either; the filter covers what an uncapable owner may
// still do to its own files.

// Offsets into the kernel's struct seccomp_data. Both supported architectures are little-endian,
// so an argument's low 32 bits come first; the modes and flags checked fit in them.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// modeCall is a syscall whose mode argument must carry neither S_ISUID nor S_ISGID (chmod,
// open with O_CREAT, mkdir, mknod); devices says a character or block device is refused too.
type modeCall struct {
	nr      uintptr
	arg     uint32
	devices bool
}

// modeCalls are the mode-setting syscalls every architecture has; legacyModeCalls (per
// architecture) adds the older ones arm64 never had.
var modeCalls = append([]modeCall{
	{unix.SYS_FCHMOD, 1, false},
	{unix.SYS_FCHMODAT, 2, false},
	{unix.SYS_FCHMODAT2, 2, false},
	{unix.SYS_OPENAT, 3, false},
	{unix.SYS_MKDIRAT, 2, false},
	{unix.SYS_MKNODAT, 2, true},
}, legacyModeCalls...)

// refusedCall is a syscall answered with an error, whatever its arguments.
type refusedCall struct {
	nr    uintptr
	errno syscall.Errno
}

// refusedCalls are refused outright. openat2 takes its mode in a struct the filter cannot read,
// so it answers as a kernel without it would, and C libraries fall back to openat; io_uring
// performs its operations outside the filter's sight; the keyring calls would reach keys the
// command has no use for (each sandbox also has a fresh session keyring of its own).
var refusedCalls = []refusedCall{
	{unix.SYS_OPENAT2, unix.ENOSYS},
	{unix.SYS_IO_URING_SETUP, unix.ENOSYS},
	{unix.SYS_IO_URING_ENTER, unix.ENOSYS},
	{unix.SYS_IO_URING_REGISTER, unix.ENOSYS},
	{unix.SYS_ADD_KEY, unix.EPERM},
	{unix.SYS_REQUEST_KEY, unix.EPERM},
	{unix.SYS_KEYCTL, unix.EPERM},
}

// errno is the filter's answer that fails a syscall with e.
func errno(e syscall.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e)&unix.SECCOMP_RET_DATA }

// buildFilter assembles the filter: a syscall of another architecture kills the process (its
// numbers mean other calls; on amd64 that is the i386 entry through int 0x80), an x32 number is
// answered as a kernel without x32 would, the refused calls fail, the mode-setting calls fail
// with EPERM when they ask for setuid, setgid or a device, and everything else is allowed.
func buildFilter() ([]unix.SockFilter, error) {
	if nativeArch == 0 {
		return nil, fmt.Errorf("the sandbox's syscall filter knows no syscall numbers for %s", runtime.GOARCH)
	}
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: nativeArch, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	if x32Bit != 0 {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32Bit, SkipFalse: 1},
			bpf.RetConstant{Val: errno(unix.ENOSYS)})
	}
	for _, c := range refusedCalls {
		prog = append(prog,
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(c.nr), SkipTrue: 1},
			bpf.RetConstant{Val: errno(c.errno)})
	}
	for _, c := range modeCalls {
		check := modeCheck(c)
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(c.nr), SkipTrue: uint8(len(check))})
		prog = append(prog, check...)
	}
	prog = append(prog, bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW})
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("assembling the sandbox's syscall filter: %w", err)
	}
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out, nil
}

// modeCheck judges one mode-setting call whose number matched; it always returns, so the
// accumulator it overwrites is never compared with another number.
func modeCheck(c modeCall) []bpf.Instruction {
	check := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArgs + 8*c.arg, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.S_ISUID | unix.S_ISGID, SkipFalse: 1},
		bpf.RetConstant{Val: errno(unix.EPERM)},
	}
	if c.devices {
		check = append(check,
			bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: unix.S_IFMT},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.S_IFCHR, SkipTrue: 1},
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.S_IFBLK, SkipTrue: 1},
			bpf.RetConstant{Val: errno(unix.EPERM)})
	}
	return append(check, bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW})
}

// installFilter puts the filter on the calling thread, which must have set no_new_privs; the
// processes it starts inherit it and cannot remove it.
func installFilter(prog []unix.SockFilter) error {
	if len(prog) == 0 {
		return errors.New("installing the sandbox's syscall filter: the filter is empty")
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if e != 0 {
		return fmt.Errorf("installing the sandbox's syscall filter: %w", e)
	}
	return nil
}
