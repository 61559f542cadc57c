package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/keelrun/keel/internal/contract"
)

// PostgresStore keeps nodes in one table: the backend a team runs when workers live on several
// machines.
type PostgresStore struct {
	pool *pgxpool.Pool
}

var schema = []string{
	`CREATE TABLE IF NOT EXISTS keel_messages (id text PRIMARY KEY, parent text NOT NULL, body jsonb NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS keel_blobs (id text PRIMARY KEY, data bytea NOT NULL)`,
	// The ledger of side effects (see Ledger): id is LedgerKey's digest, the other columns name
	// the call for a person reading the table.
	`CREATE TABLE IF NOT EXISTS keel_ledger (id text PRIMARY KEY, session_id text NOT NULL, turn integer NOT NULL,
		call_id text NOT NULL, claimed boolean NOT NULL DEFAULT true, outcome jsonb, resolved boolean NOT NULL DEFAULT false,
		at timestamptz NOT NULL DEFAULT now())`,
	// Tables made before calls could be resolved gain the column.
	`ALTER TABLE keel_ledger ADD COLUMN IF NOT EXISTS resolved boolean NOT NULL DEFAULT false`,
}

// OpenPostgres connects and creates the table if needed.
func OpenPostgres(ctx context.Context, dsn string) (*PostgresStore, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("connecting to the postgres store: %w", err)
	}
	// Workers that start together would race on CREATE TABLE IF NOT EXISTS (PostgreSQL answers the
	// loser with a duplicate key in its catalog); an advisory lock makes them take turns.
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7242351)`); err != nil {
			return err
		}
		for _, stmt := range append(schema, workspaceSchema...) {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("creating the postgres store table: %w", err)
	}
	return &PostgresStore{pool: pool}, nil
}

// Append implements Store.
func (s *PostgresStore) Append(ctx context.Context, parent string, msgs []contract.Message) (string, error) {
	return appendChain(ctx, parent, msgs, func(ctx context.Context, id string, n node) error {
		body, err := json.Marshal(n.Message)
		if err != nil {
			return err
		}
		_, err = s.pool.Exec(ctx, `INSERT INTO keel_messages (id, parent, body) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`, id, n.Parent, body)
		return err
	})
}

// Load implements Store with one recursive query.
func (s *PostgresStore) Load(ctx context.Context, head string) ([]contract.Message, error) {
	if head == "" {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `WITH RECURSIVE chain(id, parent, body, depth) AS (
		SELECT id, parent, body, 0 FROM keel_messages WHERE id = $1
		UNION ALL
		SELECT m.id, m.parent, m.body, c.depth + 1 FROM keel_messages m JOIN chain c ON m.id = c.parent
	) SELECT parent, body FROM chain ORDER BY depth DESC`, head)
	if err != nil {
		return nil, fmt.Errorf("loading transcript %s: %w", head, err)
	}
	var out []contract.Message
	var first string
	for rows.Next() {
		var parent string
		var body []byte
		if err := rows.Scan(&parent, &body); err != nil {
			return nil, fmt.Errorf("reading transcript %s: %w", head, err)
		}
		if len(out) == 0 {
			first = parent
		}
		var m contract.Message
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, fmt.Errorf("decoding a message of transcript %s: %w", head, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("loading transcript %s: %w", head, err)
	}
	if len(out) == 0 || first != "" {
		return nil, fmt.Errorf("loading transcript %s: %w", head, ErrNotFound)
	}
	return out, nil
}

// Close implements Store.
func (s *PostgresStore) Close() error {
	s.pool.Close()
	return nil
}
