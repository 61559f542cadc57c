package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/keelrun/keel/internal/contract"
)

// Ledger is the ledger of side effects: for every tool call, a claim written before a tool that
// may change something starts and the outcome written the moment it ends, before the activity
// reports. A turn whose tool activity never reported (timeout, dead worker, a completion lost in
// a Temporal outage) reads it to tell a finished call from one that never started and from one
// that may have done anything.
type Ledger interface {
	// Claim records that the call is about to start; a second claim of the same call is a no-op.
	Claim(ctx context.Context, key LedgerKey) error
	// Settle records how the call ended.
	Settle(ctx context.Context, key LedgerKey, out Outcome) error
	// Lookup returns what is recorded for the call: the zero Entry when nothing is.
	Lookup(ctx context.Context, key LedgerKey) (Entry, error)
}

// LedgerKey names one tool call: the session, the turn and the call, and the run of the turn
// workflow that made it, so a session ID used again for a new job never reads an old job's calls.
type LedgerKey struct {
	SessionID string
	Turn      int
	CallID    string
	TurnRun   string
}

// id is the key's file name and row id: a digest, so no part of the key needs escaping.
func (k LedgerKey) id() string {
	b, _ := json.Marshal([]string{k.SessionID, strconv.Itoa(k.Turn), k.CallID, k.TurnRun})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Outcome is how a call ended.
type Outcome struct {
	Result contract.ToolResult `json:"result"`
	// Shown says the tool_result event went to the session's watchers, so nobody posts it again.
	Shown bool `json:"shown,omitempty"`
}

// Entry is what the ledger holds for a call.
type Entry struct {
	Claimed bool     `json:"claimed,omitempty"`
	Outcome *Outcome `json:"outcome,omitempty"`
}

// Verdict reads an entry the way a turn answers a call that never reported: a recorded outcome
// is the result, no claim means the tool never started, a claim alone means it may have done
// anything.
func (e Entry) Verdict() string {
	switch {
	case e.Outcome != nil:
		return contract.LedgerOutcome
	case e.Claimed:
		return contract.LedgerUnknown
	default:
		return contract.LedgerNotRun
	}
}

// ledgerPath is where the file store keeps a call's entry.
func (s *FileStore) ledgerPath(k LedgerKey) string {
	id := k.id()
	return filepath.Join(s.dir, "ledger", id[:2], id+".json")
}

// Claim implements Ledger. An existing entry is left as it is: a claim never hides an outcome.
func (s *FileStore) Claim(_ context.Context, k LedgerKey) error {
	p := s.ledgerPath(k)
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := writeAtomic(p, Entry{Claimed: true}); err != nil {
		return fmt.Errorf("claiming tool call %s: %w", k.CallID, err)
	}
	return nil
}

// Settle implements Ledger.
func (s *FileStore) Settle(ctx context.Context, k LedgerKey, out Outcome) error {
	e, err := s.Lookup(ctx, k)
	if err != nil {
		return err
	}
	e.Outcome = &out
	if err := writeAtomic(s.ledgerPath(k), e); err != nil {
		return fmt.Errorf("recording the outcome of tool call %s: %w", k.CallID, err)
	}
	return nil
}

// Lookup implements Ledger.
func (s *FileStore) Lookup(_ context.Context, k LedgerKey) (Entry, error) {
	b, err := os.ReadFile(s.ledgerPath(k))
	if errors.Is(err, fs.ErrNotExist) {
		return Entry{}, nil
	}
	if err != nil {
		return Entry{}, fmt.Errorf("reading the ledger entry of tool call %s: %w", k.CallID, err)
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return Entry{}, fmt.Errorf("decoding the ledger entry of tool call %s: %w", k.CallID, err)
	}
	return e, nil
}

// writeAtomic writes v as JSON to p through a temporary file and a rename, so a reader (or a
// worker that dies mid-write) never sees half an entry.
func writeAtomic(p string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".entry-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// Claim implements Ledger.
func (s *PostgresStore) Claim(ctx context.Context, k LedgerKey) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO keel_ledger (id, session_id, turn, call_id) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING`,
		k.id(), k.SessionID, k.Turn, k.CallID)
	if err != nil {
		return fmt.Errorf("claiming tool call %s: %w", k.CallID, err)
	}
	return nil
}

// Settle implements Ledger. The outcome row keeps a claim made before it.
func (s *PostgresStore) Settle(ctx context.Context, k LedgerKey, out Outcome) error {
	body, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("encoding the outcome of tool call %s: %w", k.CallID, err)
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO keel_ledger (id, session_id, turn, call_id, claimed, outcome) VALUES ($1, $2, $3, $4, false, $5)
		ON CONFLICT (id) DO UPDATE SET outcome = EXCLUDED.outcome`, k.id(), k.SessionID, k.Turn, k.CallID, body)
	if err != nil {
		return fmt.Errorf("recording the outcome of tool call %s: %w", k.CallID, err)
	}
	return nil
}

// Lookup implements Ledger.
func (s *PostgresStore) Lookup(ctx context.Context, k LedgerKey) (Entry, error) {
	var e Entry
	var body []byte
	err := s.pool.QueryRow(ctx, `SELECT claimed, outcome FROM keel_ledger WHERE id = $1`, k.id()).Scan(&e.Claimed, &body)
	if errors.Is(err, pgx.ErrNoRows) {
		return Entry{}, nil
	}
	if err != nil {
		return Entry{}, fmt.Errorf("reading the ledger entry of tool call %s: %w", k.CallID, err)
	}
	if body != nil {
		e.Outcome = &Outcome{}
		if err := json.Unmarshal(body, e.Outcome); err != nil {
			return Entry{}, fmt.Errorf("decoding the ledger entry of tool call %s: %w", k.CallID, err)
		}
	}
	return e, nil
}
