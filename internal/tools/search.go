package tools

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/keelrun/keel/internal/contract"
)

// Limits of search, so one call cannot flood the transcript or read the whole disk.
const (
	searchMaxResults = 100
	searchMaxLine    = 200
	searchMaxFile    = 1 << 20
)

// search looks for a plain substring in the text files under p and returns "path:line: text"
// lines in walk order (sorted by name), capped.
func search(root, pattern, p string) contract.ToolResult {
	pl, refusal := resolve(root, p)
	if refusal != "" {
		return refused(refusal)
	}
	if _, err := os.Stat(pl.abs); errors.Is(err, fs.ErrNotExist) {
		return refused(fmt.Sprintf("There is no file or directory %q; nothing changed. Use list_dir on \".\" to see what exists.", pl.rel))
	}
	var hits []string
	more := false
	walkErr := filepath.WalkDir(pl.abs, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // skip what cannot be read
		}
		if d.IsDir() {
			if d.Name() == ".git" && name != pl.abs {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(root, name)
		found, truncated := searchFile(name, filepath.ToSlash(rel), pattern, searchMaxResults-len(hits))
		hits = append(hits, found...)
		if truncated {
			more = true
			return filepath.SkipAll
		}
		return nil
	})
	if walkErr != nil {
		return refused(fmt.Sprintf("The search in %q could not finish; nothing changed. Search a smaller directory.", pl.rel))
	}
	if len(hits) == 0 {
		return done(fmt.Sprintf("No text file under %q contains %q. Nothing changed.", pl.rel, pattern), false)
	}
	out := strings.Join(hits, "\n")
	if more {
		out += fmt.Sprintf("\n[cut: only the first %d matches are shown. Search a subdirectory or use a longer pattern.]", searchMaxResults)
	}
	return done(out, false)
}

// searchFile returns up to limit matching lines of one text file, and whether it stopped at the
// limit with matches left. Binary and very large files are skipped.
func searchFile(name, rel, pattern string, limit int) ([]string, bool) {
	info, err := os.Stat(name)
	if err != nil || info.Size() > searchMaxFile {
		return nil, false
	}
	data, err := os.ReadFile(name)
	if err != nil || bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0 {
		return nil, false
	}
	var hits []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), searchMaxFile)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !strings.Contains(line, pattern) {
			continue
		}
		if len(hits) == limit {
			return hits, true
		}
		if len(line) > searchMaxLine {
			line = strings.ToValidUTF8(line[:searchMaxLine], "") + "…"
		}
		hits = append(hits, fmt.Sprintf("%s:%d: %s", rel, n, line))
	}
	return hits, false
}
