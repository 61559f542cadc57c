package snapshot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fill writes a file of n bytes no other call of fill writes.
func fill(t *testing.T, path string, n int, seed int) {
	t.Helper()
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + seed*17 + i/251)
	}
	copy(b, fmt.Sprint(seed, path))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// age sets the time of every snapshot of a session to d ago.
func age(t *testing.T, s *Store, session string, d time.Duration) {
	t.Helper()
	turns, _ := s.turns(session)
	for _, turn := range turns {
		when := time.Now().Add(-d)
		if err := os.Chtimes(s.manifestPath(session, turn), when, when); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPrune: by age whole sessions go; by size the oldest turns go first and each session's
// newest stays while it can; a dry run removes nothing and says the same; a pruned turn is
// refused by name, never answered with an earlier turn's files.
func TestPrune(t *testing.T) {
	cases := []struct {
		name      string
		opts      PruneOptions
		wantGone  map[string]string // session: "whole" or the turns that go
		wantUnder int64
	}{
		{"age", PruneOptions{KeepFor: 14 * 24 * time.Hour}, map[string]string{"old": "whole"}, 0},
		{"size", PruneOptions{KeepBytes: 2 << 20}, map[string]string{"old": "whole", "busy": "[1 2 3]"}, 2 << 20},
		{"dry run", PruneOptions{KeepBytes: 2 << 20, DryRun: true}, map[string]string{"old": "whole", "busy": "[1 2 3]"}, 0},
		{"nothing to do", PruneOptions{KeepFor: 60 * 24 * time.Hour, KeepBytes: 1 << 30}, map[string]string{}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(t.TempDir())
			wd := t.TempDir()
			// "old": one turn of 1 MiB, a month ago.
			fill(t, filepath.Join(wd, "old"), 1<<20, 0)
			if _, err := s.Take("old", 1, wd); err != nil {
				t.Fatal(err)
			}
			age(t, s, "old", 30*24*time.Hour)
			// "busy": five turns, each 1 MiB of new content replacing the last; the newest the
			// latest of all.
			os.Remove(filepath.Join(wd, "old"))
			for turn := 1; turn <= 4; turn++ {
				os.Remove(filepath.Join(wd, fmt.Sprint("f", turn-1)))
				fill(t, filepath.Join(wd, fmt.Sprint("f", turn)), 1<<20, turn)
				if _, err := s.Take("busy", turn, wd); err != nil {
					t.Fatal(err)
				}
				age(t, s, "busy", time.Duration(10-turn)*time.Hour)
				turns, _ := s.turns("busy")
				for _, tn := range turns[:len(turns)-1] {
					when := time.Now().Add(-time.Duration(20-tn) * time.Hour)
					os.Chtimes(s.manifestPath("busy", tn), when, when)
				}
			}
			before := Usage(s.Root)
			rep, err := s.Prune(c.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, p := range rep.Sessions {
				if p.Whole {
					got[p.Session] = "whole"
				} else {
					got[p.Session] = fmt.Sprint(p.Turns)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.wantGone) {
				t.Fatalf("pruned %v, want %v", got, c.wantGone)
			}
			after := Usage(s.Root)
			if c.opts.DryRun {
				if after != before {
					t.Fatalf("a dry run changed the store: %d bytes, then %d", before, after)
				}
				if rep.After > c.opts.KeepBytes {
					t.Fatalf("a dry run says the store would take %d bytes, over %d", rep.After, c.opts.KeepBytes)
				}
				return
			}
			if rep.After != after {
				t.Errorf("the report says %d bytes after, the store takes %d", rep.After, after)
			}
			if c.wantUnder > 0 && after > c.wantUnder {
				t.Fatalf("after prune the store takes %d bytes, over %d", after, c.wantUnder)
			}
			if got["busy"] != "" {
				var me *MissingError
				if _, err := s.Find("busy", 2); !errors.As(err, &me) {
					t.Fatalf("a pruned turn: %v, want it refused as pruned", err)
				}
			}
			m, err := s.Find("busy", 4)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Restore(m, filepath.Join(t.TempDir(), "fork")); err != nil {
				t.Fatalf("the newest turn no longer restores: %v", err)
			}
		})
	}
}
