package tools

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// Limits of search, so one call cannot flood the transcript or hold much of the worker's memory.
// A file is read through a buffer of searchChunk bytes, never whole, so a line of any length costs
// no more than that; files larger than MaxFileBytes are skipped and named in the result.
const (
	searchMaxResults = 100
	searchMaxLine    = 200
	searchChunk      = 64 << 10
	searchNameSkips  = 3
)

// searcher is one search call's walk: what it looks for, what it found, and how much of its
// budget is left.
type searcher struct {
	root     string
	pattern  []byte
	deadline time.Time
	lim      walkLimits
	left     int // directory entries the walk may still read
	hits     []string
	full     bool // more matches than searchMaxResults
	cut      cutReason
	tooBig   []string // the first few files skipped for their size
	skipped  int      // how many were
}

// search looks for a plain substring in the text files under p and returns "path:line: text"
// lines in walk order (sorted by name), capped in matches, entries read and time.
func (b *Box) search(root, pattern, p string, lim walkLimits) contract.ToolResult {
	pl, refusal := resolve(root, p)
	if refusal != "" {
		return refused(refusal)
	}
	f, info, err := openPlain(pl.abs)
	if err != nil {
		return refused(openRefusal(toolspec.Search, pl.rel, err,
			fmt.Sprintf("%q cannot be searched; nothing changed. Search another directory or continue without it.", pl.rel),
			fmt.Sprintf("There is no file or directory %q; nothing changed. Use list_dir on \".\" to see what exists.", pl.rel)))
	}
	s := &searcher{root: root, pattern: []byte(pattern), deadline: time.Now().Add(lim.time), lim: lim, left: lim.entries}
	if !info.IsDir() {
		if info.Size() > MaxFileBytes {
			f.Close()
			return refused(tooBigRefusal(toolspec.Search, pl.rel, info.Size(),
				"Use run_command with a tool such as grep to search it."))
		}
		s.file(f, info, pl.abs)
		return s.result(pl.rel, pattern)
	}
	s.dir(f, pl.abs)
	return s.result(pl.rel, pattern)
}

// dir searches an open directory, entries by name, and closes it before it descends, so a deep
// tree holds one descriptor at a time. Folders named .git below it are left out (the one the
// search starts in may be one).
func (s *searcher) dir(f *os.File, abs string) {
	entries, read, cut, err := readEntries(f, s.left, s.deadline, s.left)
	f.Close()
	s.left -= read
	if cut != notCut {
		s.cut = cut
	}
	if err != nil {
		return // skip what cannot be read
	}
	for _, e := range entries {
		if s.stopped() {
			return
		}
		name := filepath.Join(abs, e.Name())
		switch {
		case e.IsDir() && e.Name() == ".git":
		case e.IsDir():
			if sub, info, err := openPlain(name); err == nil {
				if info.IsDir() {
					s.dir(sub, name)
				} else {
					sub.Close()
				}
			}
		case e.Type().IsRegular():
			if f, info, err := openPlain(name); err == nil {
				s.file(f, info, name)
			}
		}
	}
}

// stopped reports whether the walk must end now: enough matches, or its time is up.
func (s *searcher) stopped() bool {
	if s.full || s.cut == cutTime {
		return true
	}
	if !time.Now().After(s.deadline) {
		return false
	}
	if s.cut == notCut {
		s.cut = cutTime // a cut by entries is already said, and says the same next step
	}
	return true
}

// file searches one open file and closes it. Directories (a race with the walk) and files larger
// than MaxFileBytes are skipped; the large ones are named in the result.
func (s *searcher) file(f *os.File, info fs.FileInfo, abs string) {
	defer f.Close()
	rel, _ := filepath.Rel(s.root, abs)
	rel = filepath.ToSlash(rel)
	switch {
	case !info.Mode().IsRegular():
		return
	case info.Size() > MaxFileBytes:
		if s.skipped < searchNameSkips {
			s.tooBig = append(s.tooBig, rel)
		}
		s.skipped++
		return
	}
	s.hits, s.full = scanLines(io.LimitReader(f, MaxFileBytes), rel, s.pattern, s.hits)
}

// scanLines appends the lines of r that contain pattern to hits, as "rel:N: text" with the text cut
// at searchMaxLine bytes, and reports whether it stopped because hits reached searchMaxResults with
// matches left. Binary files (a zero byte in the first binarySniff bytes) are skipped. r is read
// through a buffer of searchChunk bytes, so memory stays at one buffer whatever the line lengths.
func scanLines(r io.Reader, rel string, pattern []byte, hits []string) ([]string, bool) {
	br := bufio.NewReaderSize(r, searchChunk)
	if head, _ := br.Peek(binarySniff); bytes.IndexByte(head, 0) >= 0 {
		return hits, false
	}
	var long longLine
	for n := 1; ; n++ {
		chunk, err := br.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			long.add(chunk, pattern)
			chunk, err = br.ReadSlice('\n')
		}
		text := bytes.TrimSuffix(bytes.TrimSuffix(chunk, []byte("\n")), []byte("\r"))
		shown, matched := text, bytes.Contains(text, pattern)
		if long.started {
			matched, shown = long.add(text, pattern), long.shown
		}
		if matched && (len(chunk) > 0 || long.started) {
			if len(hits) == searchMaxResults {
				return hits, true
			}
			hits = append(hits, fmt.Sprintf("%s:%d: %s", rel, n, lineText(shown)))
		}
		if err != nil {
			return hits, false // the end of the file, or what could be read of it
		}
		long.reset()
	}
}

// longLine follows a line longer than searchChunk across the chunks it is read in, keeping its
// start for the result and the end of the chunk before, so a match that straddles two chunks is
// still found.
type longLine struct {
	started bool
	shown   []byte // the line's first searchMaxLine+utf8.UTFMax bytes
	tail    []byte // the end of the chunk before, one byte shorter than the pattern
	matched bool
}

// add takes the line's next chunk and reports whether the line so far contains pattern.
func (l *longLine) add(chunk, pattern []byte) bool {
	l.started = true
	if room := searchMaxLine + utf8.UTFMax - len(l.shown); room > 0 {
		l.shown = append(l.shown, chunk[:min(room, len(chunk))]...)
	}
	if !l.matched {
		l.matched = containsAcross(l.tail, chunk, pattern)
		keep := min(len(chunk), max(len(pattern)-1, 0))
		l.tail = append(l.tail[:0], chunk[len(chunk)-keep:]...)
	}
	return l.matched
}

// reset makes l ready for the next line, keeping its buffers.
func (l *longLine) reset() {
	l.started, l.matched, l.shown, l.tail = false, false, l.shown[:0], l.tail[:0]
}

// containsAcross reports whether pattern occurs in tail (the end of the chunk before, shorter than
// pattern) followed by chunk.
func containsAcross(tail, chunk, pattern []byte) bool {
	if bytes.Contains(chunk, pattern) {
		return true
	}
	if len(tail) == 0 {
		return false
	}
	joint := append(append([]byte(nil), tail...), chunk[:min(len(chunk), len(pattern)-1)]...)
	return bytes.Contains(joint, pattern)
}

// lineText is the start of a line as the result shows it: at most searchMaxLine bytes, cut on a
// character boundary, marked with an ellipsis when cut.
func lineText(line []byte) string {
	if len(line) <= searchMaxLine {
		return string(line)
	}
	return strings.ToValidUTF8(string(line[:searchMaxLine]), "") + "…"
}

// result turns what the walk found into the text for the model, with a line for each way it was
// cut short.
func (s *searcher) result(rel, pattern string) contract.ToolResult {
	var notes []string
	if s.full {
		notes = append(notes, fmt.Sprintf("[cut: only the first %d matches are shown. Search a subdirectory or use a longer pattern.]", searchMaxResults))
	}
	switch s.cut {
	case cutEntries:
		notes = append(notes, fmt.Sprintf("[cut: the search stopped after reading %d directory entries, so part of %q was not searched. "+
			"Search a subdirectory, or use run_command (for example grep -rn) to search all of it.]", s.lim.entries, rel))
	case cutTime:
		notes = append(notes, fmt.Sprintf("[cut: the search stopped after %s, so part of %q was not searched. "+
			"Search a subdirectory, or use run_command (for example grep -rn) to search all of it.]", s.lim.time, rel))
	}
	if s.skipped > 0 {
		files := "files"
		if s.skipped == 1 {
			files = "file"
		}
		notes = append(notes, fmt.Sprintf("[not searched: %d %s larger than %d MiB (%s). Use run_command (for example grep) to search them.]",
			s.skipped, files, MaxFileBytes>>20, quoteList(s.tooBig, s.skipped)))
	}
	lines := s.hits
	if len(lines) == 0 {
		head := fmt.Sprintf("No text file under %q contains %q. Nothing changed.", rel, pattern)
		if len(notes) > 0 {
			head = fmt.Sprintf("No text file in the part of %q that was searched contains %q. Nothing changed.", rel, pattern)
		}
		lines = []string{head}
	}
	return done(strings.Join(append(lines, notes...), "\n"), false)
}

// quoteList quotes names, adding "and N more" when total is larger.
func quoteList(names []string, total int) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	out := strings.Join(q, ", ")
	if total > len(names) {
		out += fmt.Sprintf(" and %d more", total-len(names))
	}
	return out
}
