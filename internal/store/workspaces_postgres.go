package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// workspaceSchema are the tables of recorded workspaces: contents by hash, each workspace's
// writer, and its records.
var workspaceSchema = []string{
	`CREATE TABLE IF NOT EXISTS keel_workspace_files (id text PRIMARY KEY, data bytea NOT NULL, at timestamptz NOT NULL DEFAULT now())`,
	`CREATE TABLE IF NOT EXISTS keel_workspace_epochs (workspace text PRIMARY KEY, epoch bigint NOT NULL, at timestamptz NOT NULL, holder text NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS keel_workspace_records (workspace text NOT NULL, seq bigint NOT NULL, session_id text NOT NULL,
		turn integer NOT NULL, call_id text NOT NULL, epoch bigint NOT NULL, commit_sha text NOT NULL, files text[] NOT NULL DEFAULT '{}',
		manifest bytea, missing text NOT NULL DEFAULT '', at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (workspace, seq))`,
	`CREATE INDEX IF NOT EXISTS keel_workspace_records_session ON keel_workspace_records (session_id, turn)`,
}

// Fence implements Workspaces in one statement: the row's lock orders concurrent fences.
func (s *PostgresStore) Fence(ctx context.Context, workspace string, at time.Time, holder string) (int64, error) {
	var epoch int64
	err := s.pool.QueryRow(ctx, `INSERT INTO keel_workspace_epochs (workspace, epoch, at, holder) VALUES ($1, 1, $2, $3)
		ON CONFLICT (workspace) DO UPDATE SET epoch = keel_workspace_epochs.epoch + 1, at = EXCLUDED.at, holder = EXCLUDED.holder
		WHERE keel_workspace_epochs.at <= EXCLUDED.at RETURNING epoch`, workspace, at, holder).Scan(&epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		var other string
		_ = s.pool.QueryRow(ctx, `SELECT holder FROM keel_workspace_epochs WHERE workspace = $1`, workspace).Scan(&other)
		return 0, fmt.Errorf("fencing the workspace for %s: %w (%s)", holder, ErrFenced, other)
	}
	if err != nil {
		return 0, fmt.Errorf("fencing the workspace: %w", err)
	}
	return epoch, nil
}

// MissingFiles implements Workspaces; the present ones are touched in the same statement.
func (s *PostgresStore) MissingFiles(ctx context.Context, hashes []string) ([]string, error) {
	if len(hashes) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `UPDATE keel_workspace_files SET at = now() WHERE id = ANY($1) RETURNING id`, hashes)
	if err != nil {
		return nil, fmt.Errorf("looking up workspace files: %w", err)
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("looking up workspace files: %w", err)
	}
	present := make(map[string]bool, len(have))
	for _, h := range have {
		present[h] = true
	}
	var out []string
	for _, h := range hashes {
		if !present[h] {
			out = append(out, h)
		}
	}
	return out, nil
}

// PutFile implements Workspaces.
func (s *PostgresStore) PutFile(ctx context.Context, hash string, data []byte) error {
	if err := checkHash(hash); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO keel_workspace_files (id, data) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET at = now()`, hash, data); err != nil {
		return fmt.Errorf("storing a workspace file: %w", err)
	}
	return nil
}

// GetFile implements Workspaces.
func (s *PostgresStore) GetFile(ctx context.Context, hash string) ([]byte, error) {
	var b []byte
	err := s.pool.QueryRow(ctx, `SELECT data FROM keel_workspace_files WHERE id = $1`, hash).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("workspace file %s: %w", hash, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading workspace file %s: %w", hash, err)
	}
	return b, nil
}

// Record implements Workspaces: the epoch's row is locked while the record is added, so a fence
// cannot slip in between the check and the write.
func (s *PostgresStore) Record(ctx context.Context, rec WorkspaceRecord) (int64, error) {
	var seq int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var epoch int64
		var holder string
		err := tx.QueryRow(ctx, `SELECT epoch, holder FROM keel_workspace_epochs WHERE workspace = $1 FOR UPDATE`, rec.Workspace).Scan(&epoch, &holder)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if epoch != rec.Epoch {
			return fmt.Errorf("%w (%s, epoch %d; this call's is %d)", ErrFenced, holder, epoch, rec.Epoch)
		}
		files := rec.Files
		if files == nil {
			files = []string{}
		}
		return tx.QueryRow(ctx, `INSERT INTO keel_workspace_records (workspace, seq, session_id, turn, call_id, epoch, commit_sha, files, manifest, missing)
			SELECT $1, coalesce(max(seq), 0) + 1, $2, $3, $4, $5, $6, $7, $8, $9 FROM keel_workspace_records WHERE workspace = $1 RETURNING seq`,
			rec.Workspace, rec.Session, rec.Turn, rec.CallID, rec.Epoch, rec.Commit, files, rec.Manifest, rec.Missing).Scan(&seq)
	})
	if err != nil {
		return 0, fmt.Errorf("recording the workspace after turn %d: %w", rec.Turn, err)
	}
	return seq, nil
}

const recordColumns = `workspace, seq, session_id, turn, call_id, epoch, commit_sha, files, manifest, missing, at`

func scanRecord(row pgx.Row) (WorkspaceRecord, error) {
	var r WorkspaceRecord
	err := row.Scan(&r.Workspace, &r.Seq, &r.Session, &r.Turn, &r.CallID, &r.Epoch, &r.Commit, &r.Files, &r.Manifest, &r.Missing, &r.At)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("no recorded workspace: %w", ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("reading a workspace record: %w", err)
	}
	if len(r.Files) == 0 {
		r.Files = nil
	}
	return r, nil
}

// LatestRecord implements Workspaces.
func (s *PostgresStore) LatestRecord(ctx context.Context, workspace string) (WorkspaceRecord, error) {
	return scanRecord(s.pool.QueryRow(ctx, `SELECT `+recordColumns+` FROM keel_workspace_records WHERE workspace = $1 ORDER BY seq DESC LIMIT 1`, workspace))
}

// RecordAt implements Workspaces.
func (s *PostgresStore) RecordAt(ctx context.Context, session string, turn int) (WorkspaceRecord, error) {
	return scanRecord(s.pool.QueryRow(ctx, `SELECT `+recordColumns+` FROM keel_workspace_records WHERE session_id = $1 AND turn <= $2
		ORDER BY seq DESC LIMIT 1`, session, turn))
}

// PruneWorkspaces implements Workspaces in one transaction.
func (s *PostgresStore) PruneWorkspaces(ctx context.Context, before time.Time, dryRun bool) (WorkspacePrune, error) {
	var rep WorkspacePrune
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		old := `SELECT workspace FROM keel_workspace_records GROUP BY workspace HAVING max(at) < $1`
		err := tx.QueryRow(ctx, `SELECT count(DISTINCT workspace), count(*) FROM keel_workspace_records
			WHERE workspace IN (`+old+`) AND manifest IS NOT NULL`, before).Scan(&rep.Workspaces, &rep.Records)
		if err != nil {
			return err
		}
		if !dryRun {
			if _, err := tx.Exec(ctx, `UPDATE keel_workspace_records SET files = '{}', manifest = NULL, missing = $2
				WHERE workspace IN (`+old+`) AND manifest IS NOT NULL`, before, PrunedNote(time.Now())); err != nil {
				return err
			}
		}
		// In a dry run the emptied records still name their files: count what only they name.
		unused := `FROM keel_workspace_files f WHERE f.at < $2 AND NOT EXISTS (SELECT 1 FROM keel_workspace_records r
			WHERE f.id = ANY(r.files) AND r.workspace NOT IN (` + old + `))`
		if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(sum(length(f.data)), 0) `+unused, before, time.Now().Add(-fileGrace)).Scan(&rep.Files, &rep.Bytes); err != nil {
			return err
		}
		if !dryRun {
			if _, err := tx.Exec(ctx, `DELETE `+unused, before, time.Now().Add(-fileGrace)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("pruning recorded workspaces: %w", err)
	}
	return rep, nil
}
