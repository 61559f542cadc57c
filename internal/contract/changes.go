package contract

// ReviewChangesActivity lists, when a session ends, the files it created, changed or deleted in
// its work directory and which of them git would not show.
const ReviewChangesActivity = "ReviewChanges"

// ReviewRequest asks for a session's changes to its work directory.
type ReviewRequest struct {
	SessionID string `json:"session_id"`
	Workdir   string `json:"workdir"`
}

// How a file changed over a session.
const (
	FileCreated = "created"
	FileChanged = "changed"
	FileDeleted = "deleted"
)

// MaxListedChanges bounds the files a session's Changes name; past it they are only counted.
// Files git would not show are listed before the rest, so the bound never hides one of them
// while it names a file git shows anyway.
const MaxListedChanges = 200

// FileChange is one file a session created, changed or deleted.
type FileChange struct {
	// Path is the file's path in the work directory, as a terminal may show it: quoted with Go's
	// escapes when it holds a character that is not printable (the model chose it).
	Path   string `json:"path"`
	Change string `json:"change"`
	// Hidden, when set, says why `git status` in the work directory would not show the change:
	// "ignored by .gitignore:1: x.go", "assume-unchanged", "skip-worktree".
	Hidden string `json:"hidden,omitempty"`
}

// Changes are the files a session created, changed or deleted in its work directory, from the
// snapshot taken before its first change and the one after its last, ignored files included.
type Changes struct {
	Files []FileChange `json:"files,omitempty"`
	// Created, Changed, Deleted and Hidden count every file, listed or not; More counts those
	// past MaxListedChanges, not listed.
	Created int `json:"created,omitempty"`
	Changed int `json:"changed,omitempty"`
	Deleted int `json:"deleted,omitempty"`
	Hidden  int `json:"hidden,omitempty"`
	More    int `json:"more,omitempty"`
	// Note, when set, says what the list may lack and why (files too big or too many for a
	// snapshot, a snapshot a size limit left out, git not asked).
	Note string `json:"note,omitempty"`
}
