package githubjobs

import (
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/contract"
)

// maxChangesBlock bounds the list of changed files in a comment; with maxAnswer it stays under
// GitHub's 65,536 characters.
const maxChangesBlock = 4000

// changeMarks mark each kind of change at the start of a file's line.
var changeMarks = map[string]string{contract.FileCreated: "+ ", contract.FileChanged: "~ ", contract.FileDeleted: "- "}

// changesBlock lists the files the session created, changed and deleted, those git status would
// not show first and flagged, in a fenced block: the names are the model's, so nothing in them
// is read as Markdown, a marker or a command.
func changesBlock(c *contract.Changes) string {
	if c == nil || c.Created+c.Changed+c.Deleted == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n\nFiles: %d created, %d changed, %d deleted", c.Created, c.Changed, c.Deleted)
	if c.Hidden > 0 {
		fmt.Fprintf(&b, ", **%d hidden from `git status`** (ignored, or marked so git does not look)", c.Hidden)
	}
	b.WriteString(".\n\n```text\n")
	var list strings.Builder
	left := len(c.Files) + c.More
	for _, f := range c.Files {
		line := changeMarks[f.Change] + oneLine(f.Path)
		if f.Hidden != "" {
			line += "   HIDDEN from git status: " + oneLine(f.Hidden)
		}
		if list.Len()+len(line) > maxChangesBlock {
			break
		}
		list.WriteString(line + "\n")
		left--
	}
	if left > 0 {
		fmt.Fprintf(&list, "... and %d more\n", left)
	}
	text := strings.NewReplacer("```", "'''", "<!--", "< !--").Replace(list.String())
	b.WriteString(text + "```")
	if c.Note != "" {
		b.WriteString("\n" + oneLine(c.Note))
	}
	return b.String()
}

// branchBlock says where the job's changes went: the branch pushed to the repository and its
// commit, or why nothing was pushed.
func branchBlock(br *contract.Branch) string {
	switch {
	case br == nil:
		return ""
	case br.Pushed:
		return fmt.Sprintf("\n\nChanges pushed as branch `%s` (commit `%s`, on `%s`).", codeSafe(br.Name), codeSafe(br.Commit), codeSafe(br.Parent))
	default:
		return "\n\nBranch: " + oneLine(br.Note)
	}
}

// codeSafe keeps a name inside its code span.
func codeSafe(s string) string { return strings.ReplaceAll(oneLine(s), "`", "'") }
