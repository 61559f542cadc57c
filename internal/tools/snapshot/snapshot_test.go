package snapshot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFindRestoresTheTurnAsked: the state after each turn comes back, a turn that changed nothing
// takes the last earlier one (the base for the turns before the first change, which a second
// EnsureBase does not replace), and a session without snapshots has none.
func TestFindRestoresTheTurnAsked(t *testing.T) {
	wd, s := t.TempDir(), New(t.TempDir())
	write(t, filepath.Join(wd, "a.txt"), "start")
	if err := s.EnsureBase("keel/s 1", wd); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wd, "a.txt"), "turn 2")
	write(t, filepath.Join(wd, "sub", "b.txt"), "b")
	if _, err := s.Take("keel/s 1", 2, wd); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureBase("keel/s 1", wd); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wd, "a.txt"), "turn 4")
	if _, err := s.Take("keel/s 1", 4, wd); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Find("another session", 3); !errors.Is(err, ErrNone) {
		t.Errorf("a session without snapshots: got %v, want ErrNone", err)
	}
	cases := []struct {
		turn    int
		a       string
		hasB    bool
		missing bool
	}{
		{-1, "", false, true},
		{0, "start", false, false},
		{1, "start", false, false},
		{2, "turn 2", true, false},
		{3, "turn 2", true, false},
		{4, "turn 4", true, false},
		{9, "turn 4", true, false},
	}
	for _, c := range cases {
		m, err := s.Find("keel/s 1", c.turn)
		if c.missing {
			if !errors.Is(err, ErrNone) {
				t.Errorf("turn %d: got %v, want ErrNone", c.turn, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("turn %d: %v", c.turn, err)
		}
		dst := filepath.Join(t.TempDir(), "fork")
		if err := s.Restore(m, dst); err != nil {
			t.Fatal(err)
		}
		if got := read(t, filepath.Join(dst, "a.txt")); got != c.a {
			t.Errorf("turn %d: a.txt %q, want %q", c.turn, got, c.a)
		}
		if _, err := os.Stat(filepath.Join(dst, "sub", "b.txt")); (err == nil) != c.hasB {
			t.Errorf("turn %d: sub/b.txt there: %v, want %v", c.turn, err == nil, c.hasB)
		}
	}
}

// TestBigFilesAreSkipped: a file over MaxFileSize is listed as skipped, not stored.
func TestBigFilesAreSkipped(t *testing.T) {
	wd, s := t.TempDir(), New(t.TempDir())
	write(t, filepath.Join(wd, "small"), "x")
	if err := os.WriteFile(filepath.Join(wd, "big"), make([]byte, MaxFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := s.Take("s", 1, wd)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Skipped) != 1 || m.Skipped[0] != "big" || len(m.Entries) != 1 {
		t.Fatalf("skipped %v, entries %+v", m.Skipped, m.Entries)
	}
}

// TestUnchangedFilesAreNotReread: a file whose size and time are unchanged keeps its stored copy.
func TestUnchangedFilesAreNotReread(t *testing.T) {
	wd, s := t.TempDir(), New(t.TempDir())
	write(t, filepath.Join(wd, "a"), "one")
	m1, err := s.Take("s", 1, wd)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(s.Root, "blobs")); err != nil {
		t.Fatal(err)
	}
	m2, err := s.Take("s", 2, wd)
	if err != nil {
		t.Fatal(err)
	}
	if m1.Entries[0].Hash != m2.Entries[0].Hash {
		t.Fatal("the hash changed")
	}
	if _, err := os.Stat(s.blobPath(m2.Entries[0].Hash)); err == nil {
		t.Fatal("an unchanged file was read and stored again")
	}
}

// TestStoreRefusesWhatIsNoLongerAFile: a path the walk saw as a file but that the model swapped
// for a link to a host file, or for a named pipe, is neither followed nor waited on.
func TestStoreRefusesWhatIsNoLongerAFile(t *testing.T) {
	wd, s := t.TempDir(), New(t.TempDir())
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("host only"), 0o600); err != nil {
		t.Fatal(err)
	}
	link, fifo := filepath.Join(wd, "link"), filepath.Join(wd, "fifo")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, fifo} {
		done := make(chan error, 1)
		go func() { _, err := s.store(p); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s was stored", filepath.Base(p))
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("storing %s blocked", filepath.Base(p))
		}
	}
}

// TestSessionsSnapshotAtOnce takes every turn of many sessions at once, from goroutines of their
// own (sessions beside one another, and each session's turns racing each other), and checks that
// every turn's snapshot restores the content written before it.
func TestSessionsSnapshotAtOnce(t *testing.T) {
	const sessions, turns = 8, 4
	s := New(t.TempDir())
	var wg sync.WaitGroup
	for i := range sessions {
		wd := t.TempDir()
		session := fmt.Sprintf("session-%d", i)
		if err := s.EnsureBase(session, wd); err != nil {
			t.Fatal(err)
		}
		for turn := 1; turn <= turns; turn++ {
			if err := os.WriteFile(filepath.Join(wd, fmt.Sprintf("turn-%d.txt", turn)), []byte(session), 0o644); err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				if _, err := s.Take(session, turn, wd); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	for i := range sessions {
		session := fmt.Sprintf("session-%d", i)
		got, err := s.Turns(session)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != turns+1 {
			t.Fatalf("%s has snapshots of turns %v, want 0 to %d", session, got, turns)
		}
		m, err := s.Find(session, turns)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(t.TempDir(), "fork")
		if err := s.Restore(m, dst); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dst, fmt.Sprintf("turn-%d.txt", turns)))
		if err != nil || string(b) != session {
			t.Fatalf("%s's last turn restores %q (%v), want %q", session, b, err, session)
		}
	}
}
