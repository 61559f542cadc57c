package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/keelrun/keel/internal/contract"
)

// FileStore keeps one JSON file per node under a folder: the local default, shared by the starter
// and a worker on the same machine.
type FileStore struct {
	dir string
}

// OpenFile opens (creating) a file store in dir.
func OpenFile(dir string) (*FileStore, error) {
	if dir == "" {
		return nil, errors.New("opening the file store: no folder given")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the store folder: %w", err)
	}
	return &FileStore{dir: dir}, nil
}

func (s *FileStore) path(id string) string { return filepath.Join(s.dir, id[:2], id+".json") }

// Append implements Store.
func (s *FileStore) Append(ctx context.Context, parent string, msgs []contract.Message) (string, error) {
	return appendChain(ctx, parent, msgs, func(_ context.Context, id string, n node) error {
		p := s.path(id)
		if _, err := os.Stat(p); err == nil {
			return nil
		}
		return writeAtomic(p, n)
	})
}

// Load implements Store.
func (s *FileStore) Load(_ context.Context, head string) ([]contract.Message, error) {
	var out []contract.Message
	for id := head; id != ""; {
		b, err := os.ReadFile(s.path(id))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("loading transcript node %s: %w", id, ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("loading transcript node %s: %w", id, err)
		}
		var n node
		if err := json.Unmarshal(b, &n); err != nil {
			return nil, fmt.Errorf("decoding transcript node %s: %w", id, err)
		}
		out = append(out, n.Message)
		id = n.Parent
	}
	slices.Reverse(out)
	return out, nil
}

// Close implements Store.
func (s *FileStore) Close() error { return nil }
