package tools

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/keelrun/keel/internal/contract"
)

// Limits on what read_file and list_dir return, so one call cannot flood the transcript.
const (
	readCap     = 256 << 10
	listCap     = 1000
	binarySniff = 8000
)

// readFile returns a text file's exact content, so that edit_file can be fed text copied from it.
func readFile(root, p string) contract.ToolResult {
	pl, refusal := resolve(root, p)
	if refusal != "" {
		return refused(refusal)
	}
	info, err := os.Stat(pl.abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return refused(fmt.Sprintf("There is no file %q in the work directory; nothing changed. "+
			"Use list_dir on %q to find the right name.", pl.rel, path.Dir(pl.rel)))
	case err != nil:
		return refused(fmt.Sprintf("The file %q cannot be read; nothing changed. Choose another file or continue without it.", pl.rel))
	case info.IsDir():
		return refused(fmt.Sprintf("%q is a directory, not a file; nothing changed. Use list_dir to see what it contains.", pl.rel))
	case !info.Mode().IsRegular():
		return refused(fmt.Sprintf("%q is not a regular file; nothing changed. Read a regular file instead.", pl.rel))
	}
	data, err := readHead(pl.abs, readCap)
	if err != nil {
		return refused(fmt.Sprintf("The file %q cannot be read; nothing changed. Choose another file or continue without it.", pl.rel))
	}
	if bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0 {
		return done(fmt.Sprintf("%q is a binary file of %d bytes; its content is not shown. Nothing changed.", pl.rel, info.Size()), false)
	}
	if len(data) == 0 {
		return done(fmt.Sprintf("The file %q is empty.", pl.rel), false)
	}
	if info.Size() > int64(len(data)) {
		return done(string(data)+fmt.Sprintf("\n[cut: the file %q is %d bytes; only the first %d are shown. Use search to find the lines you need.]",
			pl.rel, info.Size(), len(data)), false)
	}
	return done(string(data), false)
}

// readHead reads at most n bytes of a file.
func readHead(name string, n int) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(n)))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return data, nil
}

// listDir lists a directory, sorted by name, directories marked with a trailing slash.
func listDir(root, p string) contract.ToolResult {
	pl, refusal := resolve(root, p)
	if refusal != "" {
		return refused(refusal)
	}
	info, err := os.Stat(pl.abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return refused(fmt.Sprintf("There is no directory %q; nothing changed. Use list_dir on %q to see what exists.", pl.rel, path.Dir(pl.rel)))
	case err != nil:
		return refused(fmt.Sprintf("The directory %q cannot be listed; nothing changed. Choose another directory or continue without it.", pl.rel))
	case !info.IsDir():
		return refused(fmt.Sprintf("%q is a file, not a directory; nothing changed. Use read_file to read it.", pl.rel))
	}
	entries, err := os.ReadDir(pl.abs) // sorted by name
	if err != nil {
		return refused(fmt.Sprintf("The directory %q cannot be listed; nothing changed. Choose another directory or continue without it.", pl.rel))
	}
	if len(entries) == 0 {
		return done(fmt.Sprintf("The directory %q is empty.", pl.rel), false)
	}
	var b strings.Builder
	for i, e := range entries {
		if i == listCap {
			fmt.Fprintf(&b, "[cut: %d more entries are not shown. Use search or list a subdirectory.]\n", len(entries)-listCap)
			break
		}
		b.WriteString(entryLine(e))
		b.WriteByte('\n')
	}
	return done(strings.TrimSuffix(b.String(), "\n"), false)
}

// entryLine renders one directory entry: "name/" for a directory, "name -> link" for a symbolic
// link, "name (N bytes)" for a file.
func entryLine(e fs.DirEntry) string {
	switch {
	case e.IsDir():
		return e.Name() + "/"
	case e.Type()&fs.ModeSymlink != 0:
		return e.Name() + " (symbolic link)"
	}
	if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
		return fmt.Sprintf("%s (%d bytes)", e.Name(), info.Size())
	}
	return e.Name()
}
