package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

// pgDSN is the PostgreSQL the development and CI machines run; KEEL_TEST_POSTGRES overrides it.
func pgDSN() string {
	if d := os.Getenv("KEEL_TEST_POSTGRES"); d != "" {
		return d
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// backends opens each store kind for a test; PostgreSQL's skips in the fast tier.
func backends() map[string]func(t *testing.T) Store {
	return map[string]func(t *testing.T) Store{
		"file": func(t *testing.T) Store {
			fs, err := OpenFile(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return fs
		},
		"postgres": func(t *testing.T) Store {
			testenv.Needs(t, "PostgreSQL")
			pg, err := OpenPostgres(context.Background(), pgDSN())
			if err != nil {
				t.Fatalf("postgres store (set KEEL_TEST_POSTGRES to point elsewhere): %v", err)
			}
			t.Cleanup(func() { pg.Close() })
			return pg
		},
	}
}

func TestAppendLoad(t *testing.T) {
	ctx := context.Background()
	for name, open := range backends() {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			task := fmt.Sprintf("task for %s %s", name, t.Name())
			first := []contract.Message{{Role: contract.RoleUser, Content: task}}
			h1, err := s.Append(ctx, "", first)
			if err != nil {
				t.Fatal(err)
			}
			second := []contract.Message{
				{Role: contract.RoleAssistant, ToolCalls: []contract.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"a"}`}}},
				{Role: contract.RoleTool, ToolCallID: "c1", Content: "hello"},
			}
			h2, err := s.Append(ctx, h1, second)
			if err != nil {
				t.Fatal(err)
			}
			again, err := s.Append(ctx, h1, second)
			if err != nil || again != h2 {
				t.Fatalf("append is not idempotent: %s vs %s (%v)", again, h2, err)
			}
			got, err := s.Load(ctx, h2)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 3 || got[0].Content != task || got[2].Content != "hello" || got[1].ToolCalls[0].Arguments != `{"path":"a"}` {
				t.Fatalf("unexpected transcript %+v", got)
			}
			prefix, err := s.Load(ctx, h1)
			if err != nil || len(prefix) != 1 {
				t.Fatalf("prefix load: %v %+v", err, prefix)
			}
			if _, err := s.Load(ctx, NodeID("missing", first[0])); !errors.Is(err, ErrNotFound) {
				t.Fatalf("missing head: want ErrNotFound, got %v", err)
			}
			empty, err := s.Load(ctx, "")
			if err != nil || len(empty) != 0 {
				t.Fatalf("empty head: %v %v", empty, err)
			}
		})
	}
}

func TestOpenUnknownBackend(t *testing.T) {
	if _, err := Open(context.Background(), "s3x", "x"); err == nil {
		t.Fatal("want an error for an unknown backend")
	}
}

func TestCachedMatchesStore(t *testing.T) {
	ctx := context.Background()
	fs, err := OpenFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := WithCache(fs, 2)
	head := ""
	var want []contract.Message
	for i := range 5 {
		m := contract.Message{Role: contract.RoleUser, Content: fmt.Sprintf("message %d", i)}
		want = append(want, m)
		if head, err = c.Append(ctx, head, []contract.Message{m}); err != nil {
			t.Fatal(err)
		}
		got, err := c.Load(ctx, head)
		if err != nil || len(got) != len(want) || got[i].Content != m.Content {
			t.Fatalf("after %d appends the cache returns %+v (%v)", i+1, got, err)
		}
		got[0].Content = "changed by a caller"
	}
	fresh, err := fs.Load(ctx, head)
	if err != nil || len(fresh) != 5 || fresh[0].Content != "message 0" {
		t.Fatalf("the store itself: %+v (%v)", fresh, err)
	}
	if again, _ := c.Load(ctx, head); again[0].Content != "message 0" {
		t.Fatal("a caller's change leaked into the cache")
	}
	if len(c.heads) != 1 {
		t.Fatalf("the cache holds %d entries for one session's transcript, want 1", len(c.heads))
	}
}
