package tools

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// Limits on what read_file and list_dir return, so one call cannot flood the transcript.
const (
	readCap     = 256 << 10
	listCap     = 1000
	binarySniff = 8000
)

// walkLimits bound one list_dir or search call in directory entries read (in all directories
// together) and in time, so a folder of millions of files, or a tree the model grows on purpose,
// costs the worker a bounded amount of memory and time. The result says when a walk was cut.
type walkLimits struct {
	entries int
	time    time.Duration
}

// walkBounds are the limits of every list_dir and search call: far more than a repository's
// folders hold, far less than what would hold a worker thread or its memory for long.
var walkBounds = walkLimits{entries: 50_000, time: 10 * time.Second}

// cutReason says why a walk stopped before it had read everything.
type cutReason int

const (
	notCut cutReason = iota
	cutEntries
	cutTime
)

// readFile returns a text file's exact content, so that edit_file can be fed text copied from it.
func (b *Box) readFile(root, p string) contract.ToolResult {
	pl, refusal := resolve(root, p)
	if refusal != "" {
		return refused(refusal)
	}
	unreadable := fmt.Sprintf("The file %q cannot be read; nothing changed. Choose another file or continue without it.", pl.rel)
	f, info, err := openPlain(pl.abs)
	if err != nil {
		return refused(openRefusal(toolspec.ReadFile, pl.rel, err, unreadable,
			fmt.Sprintf("There is no file %q in the work directory; nothing changed. "+
				"Use list_dir on %q to find the right name.", pl.rel, path.Dir(pl.rel))))
	}
	defer f.Close()
	if info.IsDir() {
		return refused(fmt.Sprintf("%q is a directory, not a file; nothing changed. Use list_dir to see what it contains.", pl.rel))
	}
	data, err := io.ReadAll(io.LimitReader(f, readCap))
	if err != nil {
		return refused(unreadable)
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

// openRefusal words a failed openPlain for the model: missing when the path does not exist, the
// kind of file when it is neither a regular file nor a directory, unreadable otherwise.
func openRefusal(tool, rel string, err error, unreadable, missing string) string {
	var np *notPlainError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return missing
	case errors.As(err, &np):
		return notPlainRefusal(tool, rel, np)
	}
	return unreadable
}

// listDir lists a directory, sorted by name, directories marked with a trailing slash. It reads at
// most lim's entries, keeping only the first listCap names, so a huge directory costs no more
// memory than a large one.
func (b *Box) listDir(root, p string, lim walkLimits) contract.ToolResult {
	pl, refusal := resolve(root, p)
	if refusal != "" {
		return refused(refusal)
	}
	unlistable := fmt.Sprintf("The directory %q cannot be listed; nothing changed. Choose another directory or continue without it.", pl.rel)
	f, info, err := openPlain(pl.abs)
	if err != nil {
		return refused(openRefusal(toolspec.ListDir, pl.rel, err, unlistable,
			fmt.Sprintf("There is no directory %q; nothing changed. Use list_dir on %q to see what exists.", pl.rel, path.Dir(pl.rel))))
	}
	defer f.Close()
	if !info.IsDir() {
		return refused(fmt.Sprintf("%q is a file, not a directory; nothing changed. Use read_file to read it.", pl.rel))
	}
	entries, read, cut, err := readEntries(f, lim.entries, time.Now().Add(lim.time), listCap)
	if err != nil {
		return refused(unlistable)
	}
	if read == 0 {
		return done(fmt.Sprintf("The directory %q is empty.", pl.rel), false)
	}
	var out strings.Builder
	for _, e := range entries {
		out.WriteString(entryLine(e))
		out.WriteByte('\n')
	}
	switch {
	case cut == cutEntries:
		fmt.Fprintf(&out, "[cut: %q holds more than %d entries, more than list_dir reads in one call; these are the first %d names, "+
			"in order, of the %d it read. List a subdirectory, or use run_command (for example find with -name) to narrow it down.]\n",
			pl.rel, lim.entries, len(entries), read)
	case cut == cutTime:
		fmt.Fprintf(&out, "[cut: reading %q took longer than %s, so list_dir stopped after %d entries; these are the first %d names, "+
			"in order, of those. List a subdirectory, or use run_command (for example find with -name) to narrow it down.]\n",
			pl.rel, lim.time, read, len(entries))
	case read > len(entries):
		fmt.Fprintf(&out, "[cut: %d more entries are not shown. Use search or list a subdirectory.]\n", read-len(entries))
	}
	return done(strings.TrimSuffix(out.String(), "\n"), false)
}

// entryBatch is how many entries readEntries asks the kernel for at a time.
const entryBatch = 1024

// readEntries reads at most max entries of an open directory, stopping early at deadline, and
// returns the first keep of them by name, sorted, how many it read, and whether it stopped before
// the end. Only about 2*keep entries are held at any time.
func readEntries(f *os.File, max int, deadline time.Time, keep int) ([]fs.DirEntry, int, cutReason, error) {
	var kept []fs.DirEntry
	read := 0
	for {
		batch, err := f.ReadDir(min(entryBatch, max-read+1))
		if len(batch) > max-read {
			kept = appendKept(kept, batch[:max-read], keep)
			return sortedHead(kept, keep), max, cutEntries, nil
		}
		read += len(batch)
		kept = appendKept(kept, batch, keep)
		switch {
		case errors.Is(err, io.EOF):
			return sortedHead(kept, keep), read, notCut, nil
		case err != nil:
			return nil, read, notCut, fmt.Errorf("reading the directory %s: %w", f.Name(), err)
		case time.Now().After(deadline):
			return sortedHead(kept, keep), read, cutTime, nil
		}
	}
}

// appendKept adds batch to kept and, once kept holds more than twice keep, drops all but the first
// keep by name.
func appendKept(kept, batch []fs.DirEntry, keep int) []fs.DirEntry {
	kept = append(kept, batch...)
	if len(kept) > 2*keep {
		kept = sortedHead(kept, keep)
	}
	return kept
}

// sortedHead sorts entries by name and returns the first n (all of them when there are fewer).
func sortedHead(entries []fs.DirEntry, n int) []fs.DirEntry {
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return slices.Clip(entries[:min(n, len(entries))])
}

// entryLine renders one directory entry: "name/" for a directory, "name (symbolic link)" for a
// symbolic link, "name (N bytes)" for a file, and what it is for anything else (a named pipe, a
// socket, a device), so the model knows before it tries to read it.
func entryLine(e fs.DirEntry) string {
	switch {
	case e.IsDir():
		return e.Name() + "/"
	case e.Type()&fs.ModeSymlink != 0:
		return e.Name() + " (symbolic link)"
	case !e.Type().IsRegular():
		return e.Name() + " (" + kindOf(e.Type()) + ")"
	}
	if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
		return fmt.Sprintf("%s (%d bytes)", e.Name(), info.Size())
	}
	return e.Name()
}
