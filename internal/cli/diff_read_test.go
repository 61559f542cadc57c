package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadInWorkdirNeverBlocks: the file a write is compared with is the model's, so a named pipe,
// a link out of the work directory, a file too big or a folder give "" at once, and only a regular
// file inside is read.
func TestReadInWorkdirNeverBlocks(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n"), 0o644))
	must(syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644))
	must(os.WriteFile(filepath.Join(outside, "secret"), []byte("secret\n"), 0o600))
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "out")))
	must(os.WriteFile(filepath.Join(dir, "big"), []byte(strings.Repeat("x", diffMaxBytes+1)), 0o644))
	must(os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	cases := []struct{ path, want string }{
		{"a.go", "package a\n"},
		{"pipe", ""},
		{"out", ""},
		{"../" + filepath.Base(outside) + "/secret", ""},
		{"big", ""},
		{"sub", ""},
		{"absent", ""},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			done := make(chan string, 1)
			go func() { done <- readInWorkdir(dir, c.path) }()
			select {
			case got := <-done:
				if got != c.want {
					t.Fatalf("readInWorkdir(%q) = %q, want %q", c.path, got, c.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("readInWorkdir(%q) still blocks after 10 s", c.path)
			}
		})
	}
}
