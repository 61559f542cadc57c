package snapshot

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs f and fails the test if it takes longer than d: a blocked open would hang it.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s took longer than %s", what, d)
	}
}

// TestRestoreRefusesHostileManifests: a manifest is checked as if the model wrote it, and a
// restore creates nothing outside its target, whatever the manifest says.
func TestRestoreRefusesHostileManifests(t *testing.T) {
	s := New(t.TempDir())
	wd := t.TempDir()
	write(t, filepath.Join(wd, "f"), "content")
	good, err := s.Take("s", 1, wd)
	if err != nil {
		t.Fatal(err)
	}
	hash := good.Entries[0].Hash
	file := func(p string) Entry { return Entry{Path: Name(p), Mode: 0o644, Size: 7, Hash: hash} }
	outside := t.TempDir()
	cases := []struct {
		name    string
		entries []Entry
		want    string
	}{
		{"dot dot", []Entry{file("../escaped")}, "not one a work directory can hold"},
		{"dot dot inside", []Entry{{Path: "a", Mode: os.ModeDir | 0o755}, file("a/../../escaped")}, "not one a work directory can hold"},
		{"absolute", []Entry{file(outside + "/escaped")}, "not one a work directory can hold"},
		{"empty component", []Entry{file("a//b")}, "not one a work directory can hold"},
		{"empty", []Entry{file("")}, "not one a work directory can hold"},
		{"NUL", []Entry{file("a\x00b")}, "not one a work directory can hold"},
		{"twice", []Entry{file("x"), file("x")}, "appears twice"},
		{"bad hash", []Entry{{Path: "x", Mode: 0o644, Size: 7, Hash: "../../../etc/shadow"}}, "no valid content"},
		{"device", []Entry{{Path: "x", Mode: os.ModeDevice | 0o644}}, "neither a file"},
		{"through a link to outside", []Entry{{Path: "out", Mode: os.ModeSymlink | 0o777, Link: Name(outside)}, file("out/escaped")}, "not a folder of the snapshot"},
		{"through a link to a folder", []Entry{{Path: "d", Mode: os.ModeDir | 0o755}, {Path: "l", Mode: os.ModeSymlink | 0o777, Link: "d"}, file("l/escaped")}, "not a folder of the snapshot"},
		{"over a link", []Entry{{Path: "out", Mode: os.ModeSymlink | 0o777, Link: Name(outside + "/escaped")}, file("out")}, "appears twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "fork")
			err := s.Restore(Manifest{Turn: 1, Entries: c.entries}, dst)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error saying %q", err, c.want)
			}
			if names, _ := os.ReadDir(outside); len(names) > 0 {
				t.Errorf("the restore created %s outside its target", names[0].Name())
			}
			if _, err := os.Lstat(filepath.Join(filepath.Dir(dst), "escaped")); err == nil {
				t.Error("the restore created a file next to its target")
			}
		})
	}
}

// TestTakeFollowsNoLinkAndWaitsOnNothing: a link to a host folder is kept as a link, never
// walked; a named pipe, a socket-like special file and a link to a host file are not read; the
// walk finishes at once.
func TestTakeFollowsNoLinkAndWaitsOnNothing(t *testing.T) {
	wd, s := t.TempDir(), New(t.TempDir())
	host := t.TempDir()
	write(t, filepath.Join(host, "secret"), "host only")
	for _, l := range []struct{ name, target string }{{"hostdir", host}, {"hostfile", filepath.Join(host, "secret")}} {
		if err := os.Symlink(l.target, filepath.Join(wd, l.name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(wd, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wd, "ok"), "fine")
	var m Manifest
	within(t, 5*time.Second, "the snapshot", func() {
		var err error
		if m, err = s.Take("s", 1, wd); err != nil {
			t.Error(err)
		}
	})
	var got []string
	for _, e := range m.Entries {
		got = append(got, string(e.Path))
	}
	if strings.Join(got, ",") != "hostdir,hostfile,ok" {
		t.Fatalf("entries %v, want hostdir,hostfile,ok (the two as links)", got)
	}
	if len(m.Skipped) != 1 || m.Skipped[0] != "fifo" {
		t.Fatalf("skipped %v, want the fifo", m.Skipped)
	}
	blobs := Usage(filepath.Join(s.Root, "blobs"))
	dst := filepath.Join(t.TempDir(), "fork")
	if err := s.Restore(m, dst); err != nil {
		t.Fatal(err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "hostdir")); err != nil || l != host {
		t.Fatalf("hostdir restored as %q, %v; want the link as it was", l, err)
	}
	if _, err := os.Lstat(filepath.Join(dst, "fifo")); err == nil {
		t.Fatal("the fifo was restored")
	}
	if blobs > 16<<10 {
		t.Fatalf("the store holds %d bytes of content for one 4-byte file", blobs)
	}
}

// TestNamesRoundTripByteForByte: names that are not UTF-8, which a JSON string would turn into
// one and the same U+FFFD, come back as they were, and a manifest of the older plain form still
// loads.
func TestNamesRoundTripByteForByte(t *testing.T) {
	wd, s := t.TempDir(), New(t.TempDir())
	names := []string{"a\xff", "a\xfe", "dir\x80", "ok é"}
	for _, n := range names[:2] {
		write(t, filepath.Join(wd, n), n)
	}
	write(t, filepath.Join(wd, names[2], names[3]), "inner")
	if err := os.Symlink("target\xff", filepath.Join(wd, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Take("s", 1, wd); err != nil {
		t.Fatal(err)
	}
	m, err := s.Find("s", 1)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "fork")
	if err := s.Restore(m, dst); err != nil {
		t.Fatal(err)
	}
	for _, n := range names[:2] {
		if got := read(t, filepath.Join(dst, n)); got != n {
			t.Errorf("%q holds %q", n, got)
		}
	}
	if got := read(t, filepath.Join(dst, names[2], names[3])); got != "inner" {
		t.Errorf("the file under the non-UTF-8 folder holds %q", got)
	}
	if l, _ := os.Readlink(filepath.Join(dst, "link")); l != "target\xff" {
		t.Errorf("the link points to %q", l)
	}
	old := `{"turn":3,"entries":[{"path":"plain","mode":420,"size":1,"hash":"` + m.Entries[0].Hash + `"}],"skipped":["big"]}`
	if err := os.WriteFile(s.manifestPath("old", 3), []byte(old), 0o600); err != nil {
		if err := os.MkdirAll(s.dir("old"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(s.manifestPath("old", 3), []byte(old), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if om, err := s.Find("old", 3); err != nil || om.Entries[0].Path != "plain" || om.Skipped[0] != "big" {
		t.Fatalf("an older manifest: %+v, %v", om, err)
	}
}

// TestSparseFilesStaySparse: a file that is mostly a hole is stored and restored as one.
func TestSparseFilesStaySparse(t *testing.T) {
	wd, s := t.TempDir(), New(t.TempDir())
	f, err := os.Create(filepath.Join(wd, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("end"), 6<<20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	m, err := s.Take("s", 1, wd)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "fork")
	if err := s.Restore(m, dst); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dst, "sparse"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != 6<<20+3 || st.Blocks*512 > 256<<10 {
		t.Fatalf("restored: %d bytes in %d blocks; want %d bytes in a few blocks", st.Size, st.Blocks, 6<<20+3)
	}
	b, _ := os.ReadFile(filepath.Join(dst, "sparse"))
	if string(b[len(b)-3:]) != "end" {
		t.Fatal("the data after the hole is lost")
	}
	if u := Usage(filepath.Join(s.Root, "blobs")); u > 256<<10 {
		t.Fatalf("the stored content takes %d bytes", u)
	}
}

// TestLimitsLeaveNewContentOut: past the session's limit a snapshot keeps its list of files but
// not their new contents, says so, and the rest of the store stays within the bound; past it
// with the manifest too, the turn gets a marker and fork is told why.
func TestLimitsLeaveNewContentOut(t *testing.T) {
	var wd string
	random := func(name string, n int) {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + int(name[0]) + i/4096)
		}
		if err := os.WriteFile(filepath.Join(wd, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name                 string
		sessionMax, totalMax int64
		wantReason           string
	}{
		{"session", 3 << 20, 0, SessionLimitSetting},
		{"state directory", 0, 3 << 20, TotalLimitSetting},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wd = t.TempDir()
			s := New(t.TempDir())
			s.SessionMax, s.TotalMax = c.sessionMax, c.totalMax
			random("one", 2<<20)
			if _, err := s.Take("s", 1, wd); err != nil {
				t.Fatal(err)
			}
			random("two", 2<<20)
			m, err := s.Take("s", 2, wd)
			var le *LimitError
			if !errors.As(err, &le) || le.Whole || le.Skipped != 1 || !strings.Contains(err.Error(), c.wantReason) {
				t.Fatalf("got %v, want a limit error naming %s", err, c.wantReason)
			}
			if len(m.Skipped) != 1 || m.Skipped[0] != "two" || !strings.Contains(m.Limit, c.wantReason) {
				t.Fatalf("skipped %v, limit %q", m.Skipped, m.Limit)
			}
			if u := Usage(s.Root); u > 3<<20 {
				t.Fatalf("the store takes %d bytes, over its limit", u)
			}
			s.SessionMax, s.TotalMax = min(c.sessionMax, 1), min(c.totalMax, 1)
			s.total = -1
			_, err = s.Take("s", 3, wd)
			if !errors.As(err, &le) || !le.Whole {
				t.Fatalf("a manifest over the limit: %v", err)
			}
			var me *MissingError
			if _, err := s.Find("s", 4); !errors.As(err, &me) || me.Turn != 3 {
				t.Fatalf("fork at turn 4 after a missing snapshot: %v", err)
			}
		})
	}
}

// TestManyNamesAreBounded: past MaxEntries the walk stops reading a folder and lists it, and
// the list of skipped paths stops at MaxSkipped, the rest counted.
func TestManyNamesAreBounded(t *testing.T) {
	wd, s := t.TempDir(), New(t.TempDir())
	sub := filepath.Join(wd, "many")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range MaxEntries + 10 {
		f, err := os.Create(filepath.Join(sub, strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	for i := range MaxSkipped + 5 {
		if err := os.WriteFile(filepath.Join(wd, "z"+strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := s.Take("s", 1, wd)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Entries) != MaxEntries || m.Skipped[0] != "many" || len(m.Skipped) != MaxSkipped || m.SkippedMore != 6 {
		t.Fatalf("%d entries, skipped %d (first %q) and %d more; want %d, the folder first, %d and 6", len(m.Entries), len(m.Skipped), m.Skipped[0], m.SkippedMore, MaxEntries, MaxSkipped)
	}
}
