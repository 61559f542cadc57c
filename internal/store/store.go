// Package store keeps session transcripts outside Temporal's history. Messages are stored
// content-addressed as a chain: each node holds one message and the id of the node before it, so a
// transcript is named by its head alone and a turn's history cost does not grow with its length.
// Appending is idempotent (the same parent and message give the same id), which makes the activity
// that appends safe to retry and safe after a worker crash.
package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/contract"
)

// Store is a transcript store.
type Store interface {
	// Append stores msgs after parent (empty for a new transcript) and returns the new head.
	Append(ctx context.Context, parent string, msgs []contract.Message) (string, error)
	// Load returns the transcript ending at head, oldest first.
	Load(ctx context.Context, head string) ([]contract.Message, error)
	// Blobs keep large Temporal payloads out of history (see ExternalStorage).
	Blobs
	// Ledger records every tool call's claim and outcome.
	Ledger
	// Workspaces records sessions' workspaces after each tool result that may have written.
	Workspaces
	Close() error
}

// ErrNotFound is returned when a node of a chain is missing.
var ErrNotFound = errors.New("transcript node not found")

// node is one stored message.
type node struct {
	Parent  string           `json:"parent"`
	Message contract.Message `json:"message"`
}

// NodeID is the content address of msg stored after parent.
func NodeID(parent string, msg contract.Message) string {
	b, _ := json.Marshal(node{Parent: parent, Message: msg})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Open opens the store named by backend: "file" (location is a folder) or "postgres" (location is
// a connection string).
func Open(ctx context.Context, backend, location string) (Store, error) {
	switch strings.ToLower(backend) {
	case "", "file":
		return OpenFile(location)
	case "postgres", "postgresql":
		return OpenPostgres(ctx, location)
	default:
		return nil, fmt.Errorf("unknown store backend %q (use file or postgres)", backend)
	}
}

// appendChain is the shared Append logic: put writes one node if absent.
func appendChain(ctx context.Context, parent string, msgs []contract.Message, put func(ctx context.Context, id string, n node) error) (string, error) {
	head := parent
	for _, m := range msgs {
		id := NodeID(head, m)
		if err := put(ctx, id, node{Parent: head, Message: m}); err != nil {
			return "", fmt.Errorf("storing transcript node %s: %w", id[:12], err)
		}
		head = id
	}
	return head, nil
}
