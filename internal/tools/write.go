package tools

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// writeFile creates or replaces a file atomically, creating missing parent directories inside the
// work directory. A failed write leaves the file as it was and removes directories it created.
func (b *Box) writeFile(root, p, content string) contract.ToolResult {
	pl, refusal := resolve(root, p)
	if refusal != "" {
		return refused(refusal)
	}
	if pl.rel == "." {
		return refused("The path names the work directory itself, not a file; nothing changed. Send a file name such as \"calc.go\".")
	}
	if gitControlled(root, pl.abs) {
		return refused(gitRefusal(toolspec.WriteFile, pl.rel))
	}
	info, err := os.Lstat(pl.abs) // not Stat: a pipe or a device here is refused, never followed
	existed := err == nil
	switch {
	case existed && info.IsDir():
		return refused(fmt.Sprintf("%q is a directory, not a file; nothing changed. Choose a file name inside it instead.", pl.rel))
	case existed && !info.Mode().IsRegular():
		return refused(notPlainRefusal(toolspec.WriteFile, pl.rel, &notPlainError{name: pl.abs, mode: info.Mode()}))
	}
	perm := fs.FileMode(0o644)
	if existed {
		perm = info.Mode().Perm()
	}
	created, err := makeParents(filepath.Dir(pl.abs))
	if err != nil {
		return refused(fmt.Sprintf("The folder for %q cannot be created because part of the path is a file; nothing changed. "+
			"Use list_dir to check the path, then choose another one.", pl.rel))
	}
	if err := writeAtomic(pl.abs, perm, func(f *os.File) error {
		_, err := f.WriteString(content)
		return err
	}); err != nil {
		removeDirs(created)
		return refused(fmt.Sprintf("The write to %q failed and the file is unchanged. Use list_dir to check the path, then retry.", pl.rel))
	}
	verb := "created the file"
	if existed {
		verb = "replaced its content"
	}
	return done(fmt.Sprintf("Wrote %d bytes to %q (%s); the file has changed.", len(content), pl.rel, verb), true)
}

// makeParents creates dir and its missing parents, returning the directories it created, deepest
// first, so a failed write can take them away again.
func makeParents(dir string) ([]string, error) {
	var missing []string
	for cur := dir; ; cur = filepath.Dir(cur) {
		if _, err := os.Lstat(cur); err == nil {
			break
		}
		missing = append(missing, cur)
		if filepath.Dir(cur) == cur {
			break
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		removeDirs(missing)
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	return missing, nil
}

// removeDirs removes empty directories, deepest first.
func removeDirs(dirs []string) {
	for _, d := range dirs {
		_ = os.Remove(d)
	}
}

// writeAtomic writes a file through a temporary file in the same directory and renames it into
// place, so readers see the old content or the new content, never a part.
func writeAtomic(target string, perm fs.FileMode, fill func(*os.File) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".keel-*")
	if err != nil {
		return fmt.Errorf("creating a temporary file for %s: %w", target, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := fill(tmp); err != nil {
		return fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("setting the mode of %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return fmt.Errorf("renaming into %s: %w", target, err)
	}
	return nil
}

// editFile replaces the one occurrence of old with new. Zero and several matches are refused with
// different next actions, because they need different repairs. Files larger than MaxFileBytes are
// refused before anything is read, so an edit holds at most a few copies of that much in memory.
func (b *Box) editFile(root, p, old, repl string) contract.ToolResult {
	pl, refusal := resolve(root, p)
	if refusal != "" {
		return refused(refusal)
	}
	if gitControlled(root, pl.abs) {
		return refused(gitRefusal(toolspec.EditFile, pl.rel))
	}
	unreadable := fmt.Sprintf("The file %q cannot be read; nothing changed. Choose another file or continue without it.", pl.rel)
	f, info, err := openPlain(pl.abs)
	if err != nil {
		return refused(openRefusal(toolspec.EditFile, pl.rel, err, unreadable,
			fmt.Sprintf("There is no file %q; nothing changed. Use write_file to create it, or list_dir to find the right name.", pl.rel)))
	}
	defer f.Close()
	switch {
	case info.IsDir():
		return refused(fmt.Sprintf("%q is a directory, not a file; nothing changed. Use list_dir to see what it contains.", pl.rel))
	case old == "":
		return refused(fmt.Sprintf("The field old is empty, so there is nothing to find; the file %q is unchanged. "+
			"Copy the exact text to replace into old, or use write_file to replace the whole file.", pl.rel))
	case old == repl:
		return refused(fmt.Sprintf("The fields old and new are the same, so the edit would do nothing; the file %q is unchanged. "+
			"Send the replacement text in new, or continue if the file is already right.", pl.rel))
	case info.Size() > MaxFileBytes:
		return refused(tooBigRefusal(toolspec.EditFile, pl.rel, info.Size(), editTooBigNext))
	}
	content, err := readText(f, info.Size())
	switch {
	case errors.Is(err, errTooBig):
		return refused(tooBigRefusal(toolspec.EditFile, pl.rel, int64(len(content)), editTooBigNext))
	case err != nil:
		return refused(unreadable)
	}
	switch n := strings.Count(content, old); {
	case n == 0:
		return refused(noMatch(pl.rel, content, old))
	case n > 1:
		return refused(fmt.Sprintf("The text in old appears %d times in %q (at lines %s); the file is unchanged. "+
			"Add more surrounding context to old so the match is unique.", n, pl.rel, matchLines(content, old)))
	}
	line := lineOf(content, strings.Index(content, old))
	updated := strings.Replace(content, old, repl, 1)
	if err := writeAtomic(pl.abs, info.Mode().Perm(), func(f *os.File) error {
		_, err := f.WriteString(updated)
		return err
	}); err != nil {
		return refused(fmt.Sprintf("The edit to %q failed and the file is unchanged. Use list_dir to check the path, then retry.", pl.rel))
	}
	return done(fmt.Sprintf("Replaced 1 occurrence in %q at line %d; the file has changed.", pl.rel, line), true)
}

// editTooBigNext is the next step edit_file gives for a file larger than MaxFileBytes.
const editTooBigNext = "Use run_command with a tool such as sed to change it."

// errTooBig says that a file grew past MaxFileBytes while it was read.
var errTooBig = errors.New("the file is larger than a file tool reads")

// readText reads an open file of about size bytes into one string, allocated once, reading at most
// one byte past MaxFileBytes: a file that grew past it since its size was taken gives errTooBig.
func readText(f *os.File, size int64) (string, error) {
	var b strings.Builder
	b.Grow(int(min(size, MaxFileBytes)) + 1)
	if _, err := io.Copy(&b, io.LimitReader(f, MaxFileBytes+1)); err != nil {
		return "", fmt.Errorf("reading %s: %w", f.Name(), err)
	}
	if b.Len() > MaxFileBytes {
		return b.String(), errTooBig
	}
	return b.String(), nil
}

// noMatch explains a failed match, noticing the common case where only spacing differs.
func noMatch(rel, content, old string) string {
	msg := fmt.Sprintf("The text in old was not found in %q; the file is unchanged. ", rel)
	if strings.Contains(collapse(content), collapse(old)) {
		return msg + "It does appear when spaces and line breaks are ignored, so re-read the file with read_file and copy the text exactly, including indentation and line breaks."
	}
	return msg + "Re-read the file with read_file and copy the text exactly."
}

// collapse turns every run of white space into one space and drops it at both ends, in one pass
// and one allocation the size of s (a list of the words of a large file cost many times its size).
func collapse(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	gap := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			gap = b.Len() > 0
		} else {
			if gap {
				b.WriteByte(' ')
				gap = false
			}
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// matchLines lists the line numbers where old starts, at most ten of them.
func matchLines(content, old string) string {
	var lines []string
	for off := 0; len(lines) < 10; {
		i := strings.Index(content[off:], old)
		if i < 0 {
			break
		}
		lines = append(lines, fmt.Sprint(lineOf(content, off+i)))
		off += i + len(old)
	}
	return strings.Join(lines, ", ")
}

// lineOf is the 1-based line number of a byte offset.
func lineOf(content string, offset int) int { return strings.Count(content[:offset], "\n") + 1 }
