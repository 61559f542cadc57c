package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// MaxFileBytes is the most a file tool reads of one file: edit_file refuses a larger file, and
// search skips one (read_file shows only the first readCap bytes of any file; write_file never
// reads one). Without it, edit_file on a file of hundreds of MiB held several copies of it in
// the worker's memory at once (the file, its text, the text with spaces collapsed), and every
// session on that worker paid for it.
const MaxFileBytes = 8 << 20

// openFlags open a path for reading without following a final symbolic link, without making a
// terminal the worker's controlling terminal, and without waiting: open(2) of a named pipe with no
// writer blocks until one comes, which held a worker thread for as long as the worker lived.
const openFlags = syscall.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC | syscall.O_NOCTTY

// notPlainError says that a path is neither a regular file nor a directory, and was not opened or
// was closed again at once.
type notPlainError struct {
	name string
	mode fs.FileMode
}

func (e *notPlainError) Error() string {
	return fmt.Sprintf("opening %s: a %s, not a regular file or a directory", e.name, kindOf(e.mode))
}

// openPlain opens a regular file or a directory for reading and refuses everything else (named
// pipes, sockets, devices, symbolic links) with a *notPlainError. It looks twice: lstat first, so a
// device is never opened at all (opening some devices has effects of its own), then fstat on the
// descriptor it opened without blocking, so a path swapped for a pipe in between is still refused
// and never waited on (see openChecked).
func openPlain(name string) (*os.File, fs.FileInfo, error) {
	info, err := os.Lstat(name)
	if err != nil {
		return nil, nil, fmt.Errorf("checking %s: %w", name, err)
	}
	if !plain(info.Mode()) {
		return nil, nil, &notPlainError{name: name, mode: info.Mode()}
	}
	return openChecked(name)
}

// openChecked opens name without following a final symbolic link and without waiting, then checks
// on the descriptor that it is a regular file or a directory; anything else is closed again and
// refused with a *notPlainError. What it returns is switched back to blocking reads, which the
// rest of the package expects of a regular file.
func openChecked(name string) (*os.File, fs.FileInfo, error) {
	fd, err := openNoWait(name)
	if err != nil {
		return nil, nil, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		_ = syscall.Close(fd)
		return nil, nil, fmt.Errorf("checking %s: %w", name, err)
	}
	if mode := modeOf(uint32(st.Mode)); !plain(mode) {
		_ = syscall.Close(fd)
		return nil, nil, &notPlainError{name: name, mode: mode}
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		_ = syscall.Close(fd)
		return nil, nil, fmt.Errorf("switching %s to blocking reads: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	info, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("checking %s: %w", name, err)
	}
	return f, info, nil
}

// openNoWait is open(2) with openFlags, repeated when a signal interrupts it (the Go runtime sends
// signals to its own threads to preempt them).
func openNoWait(name string) (int, error) {
	for {
		fd, err := syscall.Open(name, openFlags, 0)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return fd, nil
	}
}

// modeOf is the type part of a stat(2) mode as an fs.FileMode.
func modeOf(st uint32) fs.FileMode {
	switch st & syscall.S_IFMT {
	case syscall.S_IFREG:
		return 0
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}

// plain reports whether a file tool may open something of this mode: a regular file or a
// directory.
func plain(mode fs.FileMode) bool { return mode.IsRegular() || mode.IsDir() }

// kindOf names what a path that is not a regular file or a directory is, in words for the model:
// "named pipe", "socket", "character device".
func kindOf(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeNamedPipe != 0:
		return "named pipe"
	case mode&fs.ModeSocket != 0:
		return "socket"
	case mode&fs.ModeCharDevice != 0:
		return "character device"
	case mode&fs.ModeDevice != 0:
		return "block device"
	case mode&fs.ModeSymlink != 0:
		return "symbolic link"
	}
	return "special file"
}

// notPlainRefusal tells the model that tool did not open rel, what rel is, and what to do instead.
// Reading a pipe or a device can wait forever or never end, which a file tool must not do.
func notPlainRefusal(tool, rel string, err *notPlainError) string {
	return fmt.Sprintf("%q is a %s, not a regular file or a directory, so %s did not open it; nothing was read or changed. "+
		"Work on a regular file instead, or use run_command (with a timeout) if the task really needs it.", rel, kindOf(err.mode), tool)
}

// tooBigRefusal tells the model that a file is larger than MaxFileBytes, so tool left it alone, and
// what to use instead (next).
func tooBigRefusal(tool, rel string, size int64, next string) string {
	return fmt.Sprintf("The file %q is %s, larger than %s handles (%d MiB); nothing changed. %s",
		rel, mebibytes(size), tool, MaxFileBytes>>20, next)
}

// mebibytes writes a size in MiB, with one decimal below 10 MiB.
func mebibytes(n int64) string {
	mib := float64(n) / (1 << 20)
	if mib < 10 {
		return fmt.Sprintf("%.1f MiB", mib)
	}
	return fmt.Sprintf("%.0f MiB", mib)
}
