package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Workspaces keeps the recorded states of sessions' workspaces, so a session's files follow it to
// any worker: the files by content (each content once, however many states and sessions hold
// it), and for each tool result that may have written, a record naming them. A workspace has one
// writer at a time: Fence hands the workspace to the newest tool call and Record refuses a state
// from any other, so a worker that lost the session's task cannot overwrite what its successor
// recorded.
type Workspaces interface {
	// Fence makes the tool call scheduled at `at` the workspace's writer and returns its epoch.
	// It fails with ErrFenced when a call scheduled later holds the workspace already: the
	// caller is stale and must write nothing.
	Fence(ctx context.Context, workspace string, at time.Time, holder string) (epoch int64, err error)
	// MissingFiles are those of hashes the store does not hold; the ones it holds are kept from
	// a prune running now.
	MissingFiles(ctx context.Context, hashes []string) ([]string, error)
	// PutFile stores one content under its hash (FileHash); a present one is left as it is.
	PutFile(ctx context.Context, hash string, data []byte) error
	// GetFile returns a content PutFile stored; ErrNotFound when it is not there.
	GetFile(ctx context.Context, hash string) ([]byte, error)
	// Record appends rec to the workspace's records when rec.Epoch is still the workspace's
	// epoch, and returns its sequence number; ErrFenced otherwise, and nothing is written.
	Record(ctx context.Context, rec WorkspaceRecord) (seq int64, err error)
	// LatestRecord is the workspace's newest record; ErrNotFound when it has none.
	LatestRecord(ctx context.Context, workspace string) (WorkspaceRecord, error)
	// RecordAt is the newest record the session made at or before turn; ErrNotFound when none.
	RecordAt(ctx context.Context, session string, turn int) (WorkspaceRecord, error)
	// PruneWorkspaces empties the records of workspaces whose newest record is older than
	// before (each keeps a marker saying it was pruned, so a later restore says so instead of
	// starting from the commit) and removes the contents no record names any more.
	PruneWorkspaces(ctx context.Context, before time.Time, dryRun bool) (WorkspacePrune, error)
}

// WorkspaceRecord is one recorded state of a workspace: its files after one tool result.
type WorkspaceRecord struct {
	// Workspace names the workspace: the session that owns it (contract.Source.WorkspaceOf).
	Workspace string `json:"workspace"`
	// Seq numbers the workspace's records from 1; the store sets it.
	Seq int64 `json:"seq"`
	// Session, Turn and CallID name the tool result the state follows.
	Session string `json:"session"`
	Turn    int    `json:"turn"`
	CallID  string `json:"call_id"`
	// Epoch is the writer's epoch from Fence.
	Epoch int64 `json:"epoch"`
	// Commit is the commit the workspace was checked out at.
	Commit string `json:"commit"`
	// Files are the content hashes the manifest names, so a prune knows what is in use.
	Files []string `json:"files,omitempty"`
	// Manifest lists the workspace's entries; the store keeps it as it is given.
	Manifest []byte `json:"manifest,omitempty"`
	// Missing, when set, says why the state was not recorded (a size limit, a prune): a restore
	// of this record fails with it.
	Missing string `json:"missing,omitempty"`
	// At is when the record was made; the store sets it.
	At time.Time `json:"at"`
}

// WorkspacePrune is what PruneWorkspaces removed (or would remove, in a dry run).
type WorkspacePrune struct {
	Workspaces int
	Records    int
	Files      int
	Bytes      int64
}

// ErrFenced says a workspace write came from a tool call that no longer holds the workspace.
var ErrFenced = errors.New("another tool call holds the workspace now")

// FileHash is the content address of a workspace file.
func FileHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// PrunedNote is the Missing of a record a prune emptied.
func PrunedNote(at time.Time) string {
	return fmt.Sprintf("the recorded workspace was pruned on %s (workspaces.keep_for)", at.UTC().Format(time.DateOnly))
}

// fileGrace is how old an unreferenced content must be before a prune removes it: a record
// uploads its contents before it names them.
const fileGrace = time.Hour
