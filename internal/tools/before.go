package tools

import (
	"io"
	"os"
	"syscall"
)

// ReadForDiff is the file at path inside workdir as a diff compares it: "" when it is absent,
// unreadable, outside workdir or not a regular file; ok is false when it is larger than max, too
// large to compare. The model chose the path and the file: it is opened under an os.Root (no
// path leaves workdir), without blocking (a named pipe would otherwise hold the caller forever),
// checked on the descriptor it was opened as, and read from that descriptor only.
func ReadForDiff(workdir, path string, max int64) (content string, ok bool) {
	if workdir == "" {
		return "", true
	}
	root, err := os.OpenRoot(workdir)
	if err != nil {
		return "", true
	}
	defer func() { _ = root.Close() }()
	f, err := root.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return "", true
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return "", true
	}
	if st.Size() > max {
		return "", false
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return "", true
	}
	if int64(len(b)) > max {
		return "", false
	}
	return string(b), true
}
