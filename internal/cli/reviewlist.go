package cli

import (
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/contract"
)

// maxShownChanges bounds the files the terminal's summary names besides those git would not
// show, which it names all (up to contract.MaxListedChanges); --output jsonl has the whole list.
const maxShownChanges = 20

// changeMarks mark each kind of change at the start of a file's line.
var changeMarks = map[string]string{contract.FileCreated: "+", contract.FileChanged: "~", contract.FileDeleted: "-"}

// changeLines are the summary's lines about the files a session created, changed or deleted:
// a count, then the files git status would not show, each with why, then the others. Paths and
// reasons come from the model's work directory and are printed harmless, one a line. ranTools
// says whether the session ran any tool: a note that no snapshot exists is noise otherwise.
func changeLines(c *contract.Changes, ranTools bool) []string {
	if c == nil {
		return nil
	}
	var lines []string
	total := c.Created + c.Changed + c.Deleted
	if total > 0 {
		head := fmt.Sprintf("files: %d created, %d changed, %d deleted", c.Created, c.Changed, c.Deleted)
		if c.Hidden > 0 {
			head += fmt.Sprintf(" · %d hidden from git status", c.Hidden)
		}
		lines = append(lines, head)
	}
	shown, others := 0, 0
	for _, f := range c.Files {
		line := fmt.Sprintf("  %s %s", changeMarks[f.Change], oneLineHarmless(f.Path))
		if f.Hidden != "" {
			lines = append(lines, line+"  (hidden from git status: "+oneLineHarmless(f.Hidden)+")")
			continue
		}
		if shown >= maxShownChanges {
			others++
			continue
		}
		shown++
		lines = append(lines, line)
	}
	if n := others + c.More; n > 0 {
		lines = append(lines, fmt.Sprintf("  … and %d more (--output jsonl lists up to %d)", n, contract.MaxListedChanges))
	}
	if c.Note != "" && (total > 0 || ranTools) {
		lines = append(lines, "files: "+oneLineHarmless(c.Note))
	}
	return lines
}

// oneLineHarmless is s made harmless and kept on one line.
func oneLineHarmless(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(sanitize(s), "\n", `\n`), "\t", `\t`)
}

// branchLine is the summary's line about where the session's changes went: the branch and commit
// pushed, or why none was. The repository, branch and note are printed harmless.
func branchLine(b *contract.Branch) string {
	switch {
	case b == nil:
		return ""
	case b.Pushed:
		return fmt.Sprintf("branch: %s pushed to %s at %s (on %s)", oneLineHarmless(b.Name), oneLineHarmless(b.Repo), short(b.Commit), short(b.Parent))
	default:
		return "branch: " + oneLineHarmless(b.Note)
	}
}

// short is a commit's abbreviation for a person to read.
func short(sha string) string {
	return sha[:min(len(sha), 12)]
}
