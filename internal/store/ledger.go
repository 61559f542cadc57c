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
	// It fails with ErrResolved when the turn has already answered the call without it (the call
	// must then not start: the model was told it did not).
	Claim(ctx context.Context, key LedgerKey) error
	// Settle records how the call ended, and reports whether the turn had already answered the
	// call without this outcome (its result must then not be posted as the call's result).
	Settle(ctx context.Context, key LedgerKey, out Outcome) (resolved bool, err error)
	// Resolve is the turn's reading for a call whose activity never reported: it returns the
	// entry and, when no outcome is recorded, marks the call resolved, so a late claim refuses to
	// start the tool and a late outcome is kept but not posted.
	Resolve(ctx context.Context, key LedgerKey) (Entry, error)
	// Lookup returns what is recorded for the call: the zero Entry when nothing is.
	Lookup(ctx context.Context, key LedgerKey) (Entry, error)
}

// ErrResolved is Claim's answer for a call the turn has already answered without it.
var ErrResolved = errors.New("the call was already answered without running it")

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
	// Shown says the tool_result event already went to the session's watchers, so the turn that
	// reads the outcome does not show it again. Only entries of workers that posted events
	// straight to watchers have it; a worker now leaves it unset (activities' settle).
	Shown bool `json:"shown,omitempty"`
}

// Entry is what the ledger holds for a call.
type Entry struct {
	Claimed bool     `json:"claimed,omitempty"`
	Outcome *Outcome `json:"outcome,omitempty"`
	// Resolved says the turn answered the call from the ledger before any outcome was recorded.
	Resolved bool `json:"resolved,omitempty"`
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
// The file store's read and write are not one atomic step: it serves workers on one machine,
// where a claim and the turn's reading of the same call are seconds apart.
func (s *FileStore) Claim(ctx context.Context, k LedgerKey) error {
	e, err := s.Lookup(ctx, k)
	switch {
	case err != nil:
		return err
	case e.Resolved:
		return fmt.Errorf("claiming tool call %s: %w", k.CallID, ErrResolved)
	case e.Claimed || e.Outcome != nil:
		return nil
	}
	if err := writeAtomic(s.ledgerPath(k), Entry{Claimed: true}); err != nil {
		return fmt.Errorf("claiming tool call %s: %w", k.CallID, err)
	}
	return nil
}

// Settle implements Ledger.
func (s *FileStore) Settle(ctx context.Context, k LedgerKey, out Outcome) (bool, error) {
	e, err := s.Lookup(ctx, k)
	if err != nil {
		return false, err
	}
	e.Outcome = &out
	if err := writeAtomic(s.ledgerPath(k), e); err != nil {
		return false, fmt.Errorf("recording the outcome of tool call %s: %w", k.CallID, err)
	}
	return e.Resolved, nil
}

// Resolve implements Ledger.
func (s *FileStore) Resolve(ctx context.Context, k LedgerKey) (Entry, error) {
	e, err := s.Lookup(ctx, k)
	if err != nil || e.Outcome != nil || e.Resolved {
		return e, err
	}
	e.Resolved = true
	if err := writeAtomic(s.ledgerPath(k), e); err != nil {
		return Entry{}, fmt.Errorf("resolving tool call %s: %w", k.CallID, err)
	}
	return e, nil
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
// worker that dies mid-write) never sees half a transcript node or ledger entry.
func writeAtomic(p string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFileAtomic(p, b, 0o755)
}

// writeFileAtomic writes b to p through a synced temporary file and a rename, making p's folder
// with dirPerm: what a record or node names is whole on disk before the name appears.
func writeFileAtomic(p string, b []byte, dirPerm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), dirPerm); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".write-*")
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

// Claim implements Ledger. One statement: the row lock orders it against Resolve.
func (s *PostgresStore) Claim(ctx context.Context, k LedgerKey) error {
	var resolved bool
	err := s.pool.QueryRow(ctx, `INSERT INTO keel_ledger (id, session_id, turn, call_id) VALUES ($1, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE SET claimed = keel_ledger.claimed OR NOT keel_ledger.resolved RETURNING resolved`,
		k.id(), k.SessionID, k.Turn, k.CallID).Scan(&resolved)
	if err != nil {
		return fmt.Errorf("claiming tool call %s: %w", k.CallID, err)
	}
	if resolved {
		return fmt.Errorf("claiming tool call %s: %w", k.CallID, ErrResolved)
	}
	return nil
}

// Settle implements Ledger. The outcome row keeps a claim made before it.
func (s *PostgresStore) Settle(ctx context.Context, k LedgerKey, out Outcome) (bool, error) {
	body, err := json.Marshal(out)
	if err != nil {
		return false, fmt.Errorf("encoding the outcome of tool call %s: %w", k.CallID, err)
	}
	var resolved bool
	err = s.pool.QueryRow(ctx, `INSERT INTO keel_ledger (id, session_id, turn, call_id, claimed, outcome) VALUES ($1, $2, $3, $4, false, $5)
		ON CONFLICT (id) DO UPDATE SET outcome = EXCLUDED.outcome RETURNING resolved`, k.id(), k.SessionID, k.Turn, k.CallID, body).Scan(&resolved)
	if err != nil {
		return false, fmt.Errorf("recording the outcome of tool call %s: %w", k.CallID, err)
	}
	return resolved, nil
}

// Resolve implements Ledger, in one statement (see Claim).
func (s *PostgresStore) Resolve(ctx context.Context, k LedgerKey) (Entry, error) {
	return s.scanEntry(k, s.pool.QueryRow(ctx, `INSERT INTO keel_ledger (id, session_id, turn, call_id, claimed, resolved) VALUES ($1, $2, $3, $4, false, true)
		ON CONFLICT (id) DO UPDATE SET resolved = keel_ledger.resolved OR keel_ledger.outcome IS NULL RETURNING claimed, outcome, resolved`,
		k.id(), k.SessionID, k.Turn, k.CallID))
}

// Lookup implements Ledger.
func (s *PostgresStore) Lookup(ctx context.Context, k LedgerKey) (Entry, error) {
	return s.scanEntry(k, s.pool.QueryRow(ctx, `SELECT claimed, outcome, resolved FROM keel_ledger WHERE id = $1`, k.id()))
}

// scanEntry reads one ledger row; no row is the zero Entry.
func (s *PostgresStore) scanEntry(k LedgerKey, row pgx.Row) (Entry, error) {
	var e Entry
	var body []byte
	err := row.Scan(&e.Claimed, &body, &e.Resolved)
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
