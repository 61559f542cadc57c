package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// JobKey is the identity tuple of a job. Two starts of the same job map to the same workflow ID,
// so the second finds the first instead of running twice; a new prompt version or model alias is
// a new job.
type JobKey struct {
	Repository    string `json:"repository"`
	Commit        string `json:"commit"`
	Path          string `json:"path"`
	PromptVersion string `json:"prompt_version"`
	Model         string `json:"model"`
}

// WorkflowID derives the session's workflow ID from the job key: readable prefix, hashed tail.
func (k JobKey) WorkflowID() string {
	sum := sha256.Sum256([]byte(strings.Join([]string{k.Repository, k.Commit, k.Path, k.PromptVersion, k.Model}, "\x00")))
	return "keel-" + hex.EncodeToString(sum[:])[:20]
}

// TurnWorkflowID names the child workflow of one turn, so the Web UI lists turns in order.
func TurnWorkflowID(sessionID string, turn int) string {
	return fmt.Sprintf("%s/turn-%d", sessionID, turn)
}

// Digest is the SHA-256 hex of a text; approvals bind to the digest of a call's arguments.
func Digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
