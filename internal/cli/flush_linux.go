package cli

import "golang.org/x/sys/unix"

// flushInput discards what the terminal at fd has received and nobody read yet (tcflush with
// TCIFLUSH).
func flushInput(fd int) { _ = unix.IoctlSetInt(fd, unix.TCFLSH, unix.TCIFLUSH) }
