//go:build linux && !amd64 && !arm64

package sandbox

// nativeArch is zero: the filter knows no syscall numbers here, and the sandbox refuses to start
// without it.
const nativeArch = 0

const x32Bit = 0

var legacyModeCalls []modeCall
