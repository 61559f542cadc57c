//go:build linux && (amd64 || arm64)

package sandbox

import (
	"encoding/binary"
	"syscall"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestFilterDecisions runs the syscall filter in a BPF interpreter over syscalls of every kind it
// judges; the sandbox tests show the kernel applies it.
func TestFilterDecisions(t *testing.T) {
	prog, err := buildFilter()
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]bpf.RawInstruction, len(prog))
	for i, p := range prog {
		raw[i] = bpf.RawInstruction{Op: p.Code, Jt: p.Jt, Jf: p.Jf, K: p.K}
	}
	insns, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("the filter holds instructions the interpreter does not know")
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		t.Fatal(err)
	}
	const suid, sgid = unix.S_ISUID, unix.S_ISGID
	allow, eperm, enosys := uint32(unix.SECCOMP_RET_ALLOW), errno(unix.EPERM), errno(unix.ENOSYS)
	type call struct {
		name string
		nr   uintptr
		arg  int
		mode uint32
		want uint32
	}
	calls := []call{
		{"read", unix.SYS_READ, 2, suid, allow},
		{"fchmod 0755", unix.SYS_FCHMOD, 1, 0o755, allow},
		{"fchmod setuid", unix.SYS_FCHMOD, 1, suid | 0o755, eperm},
		{"fchmodat setgid", unix.SYS_FCHMODAT, 2, sgid | 0o755, eperm},
		{"fchmodat2 setuid", unix.SYS_FCHMODAT2, 2, suid, eperm},
		{"fchmodat2 sticky", unix.SYS_FCHMODAT2, 2, unix.S_ISVTX | 0o777, allow},
		{"openat 0644", unix.SYS_OPENAT, 3, 0o644, allow},
		{"openat setuid", unix.SYS_OPENAT, 3, suid | 0o755, eperm},
		{"mkdirat setgid", unix.SYS_MKDIRAT, 2, sgid | 0o755, eperm},
		{"mkdirat 0755", unix.SYS_MKDIRAT, 2, 0o755, allow},
		{"mknodat fifo", unix.SYS_MKNODAT, 2, unix.S_IFIFO | 0o644, allow},
		{"mknodat file", unix.SYS_MKNODAT, 2, unix.S_IFREG | 0o644, allow},
		{"mknodat char device", unix.SYS_MKNODAT, 2, unix.S_IFCHR | 0o644, eperm},
		{"mknodat block device", unix.SYS_MKNODAT, 2, unix.S_IFBLK | 0o644, eperm},
		{"mknodat setuid file", unix.SYS_MKNODAT, 2, unix.S_IFREG | suid | 0o755, eperm},
		{"openat2", unix.SYS_OPENAT2, 0, 0, enosys},
		{"io_uring_setup", unix.SYS_IO_URING_SETUP, 0, 0, enosys},
		{"io_uring_enter", unix.SYS_IO_URING_ENTER, 0, 0, enosys},
		{"io_uring_register", unix.SYS_IO_URING_REGISTER, 0, 0, enosys},
		{"add_key", unix.SYS_ADD_KEY, 0, 0, eperm},
		{"request_key", unix.SYS_REQUEST_KEY, 0, 0, eperm},
		{"keyctl", unix.SYS_KEYCTL, 0, 0, eperm},
	}
	for _, c := range legacyModeCalls {
		calls = append(calls, call{"legacy call", c.nr, int(c.arg), suid | 0o755, eperm}, call{"legacy call", c.nr, int(c.arg), 0o755, allow})
	}
	judge := func(arch uint32, nr uintptr, arg int, val uint32) uint32 {
		t.Helper()
		got, err := vm.Run(seccompData(arch, uint32(nr), arg, val))
		if err != nil {
			t.Fatal(err)
		}
		return uint32(got)
	}
	for _, c := range calls {
		if got := judge(nativeArch, c.nr, c.arg, c.mode); got != c.want {
			t.Errorf("%s (%d) with %#o in argument %d: %#x, want %#x", c.name, c.nr, c.mode, c.arg, got, c.want)
		}
	}
	for _, arch := range []uint32{unix.AUDIT_ARCH_I386, unix.AUDIT_ARCH_ARM, unix.AUDIT_ARCH_X86_64, unix.AUDIT_ARCH_AARCH64} {
		if arch == nativeArch {
			continue
		}
		if got := judge(arch, unix.SYS_GETPID, 0, 0); got != unix.SECCOMP_RET_KILL_PROCESS {
			t.Errorf("a syscall of architecture %#x: %#x, want the process killed", arch, got)
		}
	}
	if x32Bit != 0 {
		if got := judge(nativeArch, x32Bit|unix.SYS_GETPID, 0, 0); got != enosys {
			t.Errorf("an x32 syscall: %#x, want ENOSYS", got)
		}
	}
	if e := syscall.Errno(errno(unix.EPERM) & unix.SECCOMP_RET_DATA); e != unix.EPERM {
		t.Errorf("errno(EPERM) carries %v", e)
	}
}

// seccompData lays out a struct seccomp_data for the interpreter, which loads words big-endian
// where the kernel loads them in the machine's order: each 32-bit field is written big-endian at
// the offset the filter reads it from.
func seccompData(arch, nr uint32, arg int, val uint32) []byte {
	b := make([]byte, offArgs+6*8)
	binary.BigEndian.PutUint32(b[offNr:], nr)
	binary.BigEndian.PutUint32(b[offArch:], arch)
	binary.BigEndian.PutUint32(b[offArgs+8*arg:], val)
	return b
}
