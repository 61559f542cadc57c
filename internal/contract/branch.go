package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
)

// PushBranchActivity commits, when a session that ran in a workspace made from git ends, the
// workspace's final tree on top of the session's start commit and pushes it to the origin as
// the branch BranchName names.
const PushBranchActivity = "PushBranch"

// PushRequest asks for a session's changes to leave as a branch.
type PushRequest struct {
	SessionID string `json:"session_id"`
	// Source is the session's source; its Workspace names the workspace the session worked in.
	Source Source `json:"source"`
	// Message is the commit's message: the session's task and how it ended.
	Message string `json:"message"`
	// At is the commit's author and committer time, the session's end as the workflow saw it, so
	// a retried activity builds the same commit and its push changes nothing.
	At time.Time `json:"at"`
}

// Branch is where a session's changes went: a commit of the workspace's final tree whose parent
// is the commit the session started from, pushed to Repo as Name.
type Branch struct {
	Repo string `json:"repo"`
	Name string `json:"name"`
	// Commit is the pushed commit and Parent the session's start commit; both empty when
	// nothing was pushed.
	Commit string `json:"commit,omitempty"`
	Parent string `json:"parent,omitempty"`
	Pushed bool   `json:"pushed,omitempty"`
	// Note says why nothing was pushed: no change, pushing turned off, the workspace not on the
	// worker that ended the session, or the push's error.
	Note string `json:"note,omitempty"`
}

// MaxCommitMessage bounds a pushed commit's message, which quotes the session's task.
const MaxCommitMessage = 8 << 10

// BranchName is the branch a session's changes are pushed to: keel/ and the session's ID, with
// every character outside [A-Za-z0-9._-] (a sub-agent's '/', anything a person put in an ID)
// made '-', and then a digest of the ID appended, so two IDs never share a branch. The result is
// always a name git accepts (git check-ref-format) and no longer than 120 characters.
func BranchName(sessionID string) string {
	var b strings.Builder
	for _, r := range sessionID {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		case r == '.' && !strings.HasSuffix(b.String(), ".") && b.Len() > 0:
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.TrimRight(b.String(), ".")
	if len(name) > 100 {
		name = strings.TrimRight(name[:100], ".")
	}
	if name == sessionID && name != "" && !strings.HasSuffix(name, ".lock") {
		return "keel/" + name
	}
	sum := sha256.Sum256([]byte(sessionID))
	if name == "" {
		return "keel/" + hex.EncodeToString(sum[:])[:12]
	}
	return "keel/" + name + "-" + hex.EncodeToString(sum[:])[:8]
}
