package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/contract"
)

// Sealer encrypts bytes kept at rest and decrypts them again; Open returns bytes it did not seal
// (written before a key was configured) unchanged.
type Sealer interface {
	Seal(plain []byte) ([]byte, error)
	Open(data []byte) ([]byte, error)
}

// sealedRole and sealedMarker mark a stored message that holds a sealed message: the role says
// nothing of the original, the content is the marker and the sealed bytes in base64.
const (
	sealedRole   = "sealed"
	sealedMarker = "keel-sealed-message:"
)

// Sealed keeps transcripts, blobs and the ledger's outcomes encrypted at rest in st: each message
// is stored as one sealed message, each blob sealed as a whole, an outcome's content sealed (its
// flags stay readable). Everything else (claims, Close, and what st adds) passes through. Encryption draws a fresh nonce, so appending the same message twice (an activity
// retried after a crash) stores a second node with its own head instead of reusing the first;
// both load the same transcript.
func Sealed(st Store, s Sealer) Store { return &sealed{Store: st, s: s} }

type sealed struct {
	Store
	s Sealer
}

// Append seals each message before st stores it.
func (x *sealed) Append(ctx context.Context, parent string, msgs []contract.Message) (string, error) {
	out := make([]contract.Message, len(msgs))
	for i, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			return "", fmt.Errorf("encoding a message to seal: %w", err)
		}
		sb, err := x.s.Seal(b)
		if err != nil {
			return "", fmt.Errorf("sealing a message: %w", err)
		}
		out[i] = contract.Message{Role: sealedRole, Content: sealedMarker + base64.StdEncoding.EncodeToString(sb)}
	}
	return x.Store.Append(ctx, parent, out)
}

// Load opens each sealed message; messages stored before a key was configured come back as
// they are.
func (x *sealed) Load(ctx context.Context, head string) ([]contract.Message, error) {
	msgs, err := x.Store.Load(ctx, head)
	if err != nil {
		return nil, err
	}
	for i, m := range msgs {
		if m.Role != sealedRole || !strings.HasPrefix(m.Content, sealedMarker) {
			continue
		}
		sb, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(m.Content, sealedMarker))
		if err != nil {
			return nil, fmt.Errorf("reading a sealed message: %w", err)
		}
		b, err := x.s.Open(sb)
		if err != nil {
			return nil, fmt.Errorf("opening a sealed message: %w", err)
		}
		var plain contract.Message
		if err := json.Unmarshal(b, &plain); err != nil {
			return nil, fmt.Errorf("decoding a sealed message: %w", err)
		}
		msgs[i] = plain
	}
	return msgs, nil
}

// PutBlob seals a blob. Payloads Temporal's codec already encrypted are sealed once more, which
// costs little and keeps the rule simple: nothing in the store is plain.
func (x *sealed) PutBlob(ctx context.Context, id string, data []byte) error {
	sb, err := x.s.Seal(data)
	if err != nil {
		return fmt.Errorf("sealing a blob: %w", err)
	}
	return x.Store.PutBlob(ctx, id, sb)
}

// GetBlob opens a blob PutBlob sealed.
func (x *sealed) GetBlob(ctx context.Context, id string) ([]byte, error) {
	b, err := x.Store.GetBlob(ctx, id)
	if err != nil {
		return nil, err
	}
	return x.s.Open(b)
}

// Settle seals the outcome's content (a command's output, a file the tool read) before st
// records it.
func (x *sealed) Settle(ctx context.Context, key LedgerKey, out Outcome) (bool, error) {
	sb, err := x.s.Seal([]byte(out.Result.Content))
	if err != nil {
		return false, fmt.Errorf("sealing a tool outcome: %w", err)
	}
	out.Result.Content = sealedMarker + base64.StdEncoding.EncodeToString(sb)
	return x.Store.Settle(ctx, key, out)
}

// Lookup opens what Settle sealed; outcomes recorded before a key was configured come back as
// they are.
func (x *sealed) Lookup(ctx context.Context, key LedgerKey) (Entry, error) {
	return x.open(x.Store.Lookup(ctx, key))
}

// Resolve opens the outcome the way Lookup does.
func (x *sealed) Resolve(ctx context.Context, key LedgerKey) (Entry, error) {
	return x.open(x.Store.Resolve(ctx, key))
}

// open opens an entry's sealed outcome.
func (x *sealed) open(e Entry, err error) (Entry, error) {
	if err != nil || e.Outcome == nil || !strings.HasPrefix(e.Outcome.Result.Content, sealedMarker) {
		return e, err
	}
	sb, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(e.Outcome.Result.Content, sealedMarker))
	if err != nil {
		return Entry{}, fmt.Errorf("reading a sealed tool outcome: %w", err)
	}
	b, err := x.s.Open(sb)
	if err != nil {
		return Entry{}, fmt.Errorf("opening a sealed tool outcome: %w", err)
	}
	out := *e.Outcome
	out.Result.Content = string(b)
	e.Outcome = &out
	return e, nil
}

// PutFile seals a workspace file: a session run with a key leaves no file content readable in
// the store. The hash stays the plain content's, so each content is still stored once.
func (x *sealed) PutFile(ctx context.Context, hash string, data []byte) error {
	sb, err := x.s.Seal(data)
	if err != nil {
		return fmt.Errorf("sealing a workspace file: %w", err)
	}
	return x.Store.PutFile(ctx, hash, sb)
}

// GetFile opens a file PutFile sealed.
func (x *sealed) GetFile(ctx context.Context, hash string) ([]byte, error) {
	b, err := x.Store.GetFile(ctx, hash)
	if err != nil {
		return nil, err
	}
	plain, err := x.s.Open(b)
	if err != nil {
		return nil, fmt.Errorf("opening a sealed workspace file: %w", err)
	}
	return plain, nil
}

// Record seals the record's manifest (the workspace's file names).
func (x *sealed) Record(ctx context.Context, rec WorkspaceRecord) (int64, error) {
	if rec.Manifest != nil {
		sb, err := x.s.Seal(rec.Manifest)
		if err != nil {
			return 0, fmt.Errorf("sealing a workspace manifest: %w", err)
		}
		rec.Manifest = sb
	}
	return x.Store.Record(ctx, rec)
}

// LatestRecord opens the manifest Record sealed.
func (x *sealed) LatestRecord(ctx context.Context, workspace string) (WorkspaceRecord, error) {
	return x.openRecord(x.Store.LatestRecord(ctx, workspace))
}

// RecordAt opens the manifest Record sealed.
func (x *sealed) RecordAt(ctx context.Context, session string, turn int) (WorkspaceRecord, error) {
	return x.openRecord(x.Store.RecordAt(ctx, session, turn))
}

func (x *sealed) openRecord(rec WorkspaceRecord, err error) (WorkspaceRecord, error) {
	if err != nil || rec.Manifest == nil {
		return rec, err
	}
	b, err := x.s.Open(rec.Manifest)
	if err != nil {
		return WorkspaceRecord{}, fmt.Errorf("opening a sealed workspace manifest: %w", err)
	}
	rec.Manifest = b
	return rec, nil
}
