//go:build linux

package cli

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/tools/snapshot"
)

// TestForkWorkdirOfAPlantedTree: the work directory holds what a hostile model leaves (a link to
// a host file, a named pipe, a sparse file, a file too big for the snapshot that is swapped for a
// link to a host file after the snapshot, two names that are not UTF-8, one a link to a folder
// outside); the fork's directory gets only what the snapshot holds, nothing outside it changes,
// it is done at once, and the sparse file stays sparse.
func TestForkWorkdirOfAPlantedTree(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	secret := "HOST-CANARY"
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(outside, "canary"), []byte(secret), 0o600))
	must(os.Mkdir(filepath.Join(outside, "dir"), 0o755))
	must(os.Symlink(filepath.Join(outside, "canary"), filepath.Join(ws, "hostlink")))
	must(syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644))
	must(os.WriteFile(filepath.Join(ws, "big"), bytes.Repeat([]byte("x"), snapshot.MaxFileSize+1), 0o644))
	f, err := os.Create(filepath.Join(ws, "sparse"))
	must(err)
	_, err = f.WriteAt([]byte("end"), 6<<20)
	must(err)
	f.Close()
	must(os.Symlink(filepath.Join(outside, "dir"), filepath.Join(ws, "x\xfe")))
	must(os.Mkdir(filepath.Join(ws, "x\xff"), 0o755))
	must(os.WriteFile(filepath.Join(ws, "x\xff", "planted"), []byte("planted"), 0o644))

	snaps := snapshot.New(t.TempDir())
	if _, err := snaps.Take("orig", 1, ws); err != nil {
		t.Fatal(err)
	}
	// After the snapshot, the skipped file becomes a link to a host file.
	must(os.Remove(filepath.Join(ws, "big")))
	must(os.Symlink(filepath.Join(outside, "canary"), filepath.Join(ws, "big")))

	dst := filepath.Join(t.TempDir(), "fork")
	done := make(chan error, 1)
	var note string
	go func() {
		var err error
		_, note, err = forkWorkdir(snaps, "orig", 1, ws, dst, "fork-1")
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("fork: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the fork waited more than 10 s: it opened the named pipe")
	}
	_ = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(secret)) {
				t.Errorf("the fork copied the host's canary into %q", p)
			}
		}
		return nil
	})
	for _, name := range []string{"big", "fifo"} {
		if _, err := os.Lstat(filepath.Join(dst, name)); err == nil {
			t.Errorf("the fork has %s, which the snapshot skipped", name)
		}
	}
	if names, _ := os.ReadDir(filepath.Join(outside, "dir")); len(names) > 0 {
		t.Errorf("the fork created %q outside its target", names[0].Name())
	}
	if b, err := os.ReadFile(filepath.Join(dst, "x\xff", "planted")); err != nil || string(b) != "planted" {
		t.Errorf(`"x\xff"/planted in the fork: %q, %v`, b, err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "x\xfe")); err != nil || l != filepath.Join(outside, "dir") {
		t.Errorf(`"x\xfe" in the fork: %q, %v; want the link as it was`, l, err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dst, "sparse"), &st); err != nil || st.Blocks*512 > 1<<20 {
		t.Errorf("the sparse file in the fork: %d KiB of blocks, %v; want under 1 MiB", st.Blocks/2, err)
	}
	if !strings.Contains(note, "big") || !strings.Contains(note, "not in the fork") {
		t.Errorf("the fork's note %q does not say which files it lacks", note)
	}
}
