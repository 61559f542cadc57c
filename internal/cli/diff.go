package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/tools"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// Bounds of the diff shown under a write or an edit: the lines shown, the context around each
// change, and the files compared at all (larger ones show only the new lines' count).
const (
	diffShown   = 16
	diffContext = 2
	diffMaxLine = 2000
	// diffMaxBytes is the largest file a write is compared with.
	diffMaxBytes = 1 << 20
)

// callDiff is what a write_file or edit_file call changes, as diff lines under the call ("-" for a
// line removed, "+" for one added, a few unchanged ones around), or "" for any other call. A write
// is compared with the file as it is in the work directory now (the call has not run yet), read
// only when the work directory is on this machine and only through an os.Root, so a path the model
// chose cannot read outside it; an edit is its old text against its new. The lines are the model's
// text: the caller sanitizes them.
func callDiff(workdir, tool, args string) string { return callDiffFrom(workdir, tool, args, nil) }

// callDiffFrom is callDiff with the written file's content before the call when the worker read
// it (contract.Event.Before), so a call shown after it ran still shows what it changed.
func callDiffFrom(workdir, tool, args string, was *string) string {
	var before, after string
	switch tool {
	case "edit_file":
		var a toolspec.EditFileArgs
		if json.Unmarshal([]byte(args), &a) != nil {
			return ""
		}
		before, after = a.Old, a.New
	case "write_file":
		var a toolspec.WriteFileArgs
		if json.Unmarshal([]byte(args), &a) != nil {
			return ""
		}
		before, after = readInWorkdir(workdir, a.Path), a.Content
		if was != nil {
			before = *was
		}
	default:
		return ""
	}
	return diffLines(splitLines(before), splitLines(after))
}

// readInWorkdir is the file at path inside workdir, or "" when it is absent, unreadable, outside
// it, not a regular file or too big to compare (tools.ReadForDiff).
func readInWorkdir(workdir, path string) string {
	b, _ := tools.ReadForDiff(workdir, path, diffMaxBytes)
	return b
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// diffLines is a line diff of a and b (longest common subsequence), the changes with diffContext
// unchanged lines around them, at most diffShown lines and then how many more.
func diffLines(a, b []string) string { return diffLinesUpTo(a, b, diffShown) }

// diffLinesUpTo is diffLines showing at most shown lines.
func diffLinesUpTo(a, b []string, shown int) string {
	if len(a) > diffMaxLine || len(b) > diffMaxLine {
		return fmt.Sprintf("    (%d lines, %d before: too long to compare here)", len(b), len(a))
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		mark byte
		text string
	}
	var all []line
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			all = append(all, line{' ', a[i]})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			// What goes comes before what replaces it.
			all = append(all, line{'-', a[i]})
			i++
		default:
			all = append(all, line{'+', b[j]})
			j++
		}
	}
	// Keep the changed lines and diffContext unchanged ones around each.
	keep := make([]bool, len(all))
	for k, l := range all {
		if l.mark != ' ' {
			for c := max(0, k-diffContext); c <= min(len(all)-1, k+diffContext); c++ {
				keep[c] = true
			}
		}
	}
	var out []string
	limit := shown
	shown, hidden, gap := 0, 0, false
	for k, l := range all {
		if !keep[k] {
			gap = true
			continue
		}
		if shown == limit {
			if l.mark != ' ' {
				hidden++
			}
			continue
		}
		if gap && len(out) > 0 {
			out = append(out, "    …")
		}
		gap = false
		out = append(out, "    "+string(l.mark)+" "+l.text)
		shown++
	}
	if hidden > 0 {
		out = append(out, fmt.Sprintf("    … (%d more changed lines)", hidden))
	}
	return strings.Join(out, "\n")
}
