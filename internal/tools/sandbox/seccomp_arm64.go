//go:build linux && arm64

package sandbox

import "golang.org/x/sys/unix"

// nativeArch is the audit architecture of the syscalls the filter knows; 32-bit ARM programs
// (AArch32) have another and are refused.
const nativeArch = unix.AUDIT_ARCH_AARCH64

// x32Bit is zero: arm64 has no second ABI sharing its architecture value.
const x32Bit = 0

// legacyModeCalls is empty: arm64 never had chmod, open, creat, mkdir or mknod.
var legacyModeCalls []modeCall
