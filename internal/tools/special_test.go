package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// noBlockWithin is how long a file tool call may take in these tests before it counts as blocked.
// The calls take milliseconds; the margin is for a loaded machine.
const noBlockWithin = 10 * time.Second

// callNoBlock runs one tool call and fails the test if it has not returned within noBlockWithin:
// a call that waits on a named pipe would otherwise hang the test until its own timeout.
func callNoBlock(t *testing.T, b *Box, name string, args any) contract.ToolResult {
	t.Helper()
	got := make(chan contract.ToolResult, 1)
	go func() { got <- call(t, b, name, args) }()
	select {
	case res := <-got:
		return res
	case <-time.After(noBlockWithin):
		t.Fatalf("%s %v did not return within %s", name, args, noBlockWithin)
		return contract.ToolResult{}
	}
}

// specialBox is newBox plus a named pipe, a listening Unix socket, /dev/null linked into the work
// directory, and an inside link to the pipe.
func specialBox(t *testing.T) *Box {
	t.Helper()
	b, _ := newBox(t)
	if err := syscall.Mkfifo(filepath.Join(b.Root, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(b.Root, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	for link, target := range map[string]string{"null": "/dev/null", "pipe-link": "pipe", "sub/pipe-up": "../pipe"} {
		if err := os.Symlink(target, filepath.Join(b.Root, link)); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// TestSpecialFilesAreRefused checks that every file tool refuses named pipes, sockets and devices
// without blocking and without changing anything, whether it is named directly or through a link,
// and that /dev/null linked into the work directory is not followed.
func TestSpecialFilesAreRefused(t *testing.T) {
	b := specialBox(t)
	tests := []struct {
		tool string
		args func(path string) map[string]any
	}{
		{"read_file", func(p string) map[string]any { return map[string]any{"path": p} }},
		{"write_file", func(p string) map[string]any { return map[string]any{"path": p, "content": "x"} }},
		{"edit_file", func(p string) map[string]any { return map[string]any{"path": p, "old": "a", "new": "b"} }},
		{"list_dir", func(p string) map[string]any { return map[string]any{"path": p} }},
		{"search", func(p string) map[string]any { return map[string]any{"pattern": "a", "path": p} }},
	}
	paths := []struct {
		path string
		want string
	}{
		{"pipe", `"pipe" is a named pipe, not a regular file or a directory, so %s did not open it; nothing was read or changed.`},
		{"pipe-link", `"pipe-link" is a named pipe`},
		{"sub/pipe-up", `"sub/pipe-up" is a named pipe`},
		{"sock", `"sock" is a socket, not a regular file or a directory, so %s did not open it`},
		{"null", `The path "null" leads outside the work directory through a symbolic link; nothing was read or changed.`},
	}
	for _, tt := range tests {
		for _, p := range paths {
			t.Run(tt.tool+" "+p.path, func(t *testing.T) {
				before := snapshot(t, b.Root)
				res := callNoBlock(t, b, tt.tool, tt.args(p.path))
				assertUnchanged(t, before, snapshot(t, b.Root))
				if !res.IsError || res.Changed {
					t.Fatalf("result %+v, want a refusal that changed nothing", res)
				}
				want := p.want
				if strings.Contains(want, "%s") {
					want = fmt.Sprintf(want, tt.tool)
				}
				if !strings.Contains(res.Content, want) {
					t.Fatalf("content\n%q\nwant it to contain\n%q", res.Content, want)
				}
			})
		}
	}
}

// TestWalksPassSpecialFiles checks that list_dir names what special entries are and that search
// walks past them without opening them.
func TestWalksPassSpecialFiles(t *testing.T) {
	b := specialBox(t)
	res := callNoBlock(t, b, "list_dir", map[string]any{"path": "."})
	for _, want := range []string{"pipe (named pipe)\n", "sock (socket)\n", "null (symbolic link)\n"} {
		if res.IsError || !strings.Contains(res.Content+"\n", want) {
			t.Fatalf("list_dir: %+v, want a line %q", res, want)
		}
	}
	res = callNoBlock(t, b, "search", map[string]any{"pattern": "TODO"})
	if res.IsError || res.Content != "a.txt:2: TODO: one\nsub/b.txt:2: TODO: two" {
		t.Fatalf("search: %+v", res)
	}
}

// TestOpenPlain checks both of openPlain's looks: by name before anything is opened, and on the
// descriptor after a non-blocking open (what catches a path swapped in between).
func TestOpenPlain(t *testing.T) {
	b := specialBox(t)
	tests := []struct {
		name    string
		open    func(string) (*os.File, fs.FileInfo, error)
		path    string
		kind    string // "" when the open must succeed
		missing bool
	}{
		{"regular file", openPlain, "calc.go", "", false},
		{"directory", openPlain, "sub", "", false},
		{"pipe", openPlain, "pipe", "named pipe", false},
		{"socket", openPlain, "sock", "socket", false},
		{"device through a link", openPlain, "null", "symbolic link", false},
		{"missing", openPlain, "nope", "", true},
		{"pipe on the descriptor", openChecked, "pipe", "named pipe", false},
		{"device on the descriptor", openChecked, "/dev/null", "character device", false},
		{"regular file on the descriptor", openChecked, "calc.go", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := tt.path
			if !filepath.IsAbs(name) {
				name = filepath.Join(b.Root, name)
			}
			done := make(chan struct{})
			var (
				f   *os.File
				err error
			)
			go func() { f, _, err = tt.open(name); close(done) }()
			select {
			case <-done:
			case <-time.After(noBlockWithin):
				t.Fatalf("opening %s did not return within %s", tt.path, noBlockWithin)
			}
			var np *notPlainError
			switch {
			case tt.missing:
				if !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("err %v, want it not to exist", err)
				}
			case tt.kind == "":
				if err != nil {
					t.Fatal(err)
				}
				flags, err := fcntlFlags(f)
				if err != nil || flags&syscall.O_NONBLOCK != 0 {
					t.Fatalf("flags %#x, %v: want blocking reads", flags, err)
				}
				_ = f.Close()
			case !errors.As(err, &np) || kindOf(np.mode) != tt.kind:
				t.Fatalf("err %v, want a refusal of a %s", err, tt.kind)
			}
		})
	}
	if _, _, err := openChecked(filepath.Join(b.Root, "pipe-link")); !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("openChecked through a final link: %v, want it not followed", err)
	}
}

// fcntlFlags reads a descriptor's status flags, through SyscallConn because Fd would switch the
// descriptor to blocking mode itself.
func fcntlFlags(f *os.File) (int, error) {
	raw, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var flags uintptr
	var errno syscall.Errno
	if err := raw.Control(func(fd uintptr) {
		flags, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	}); err != nil {
		return 0, err
	}
	if errno != 0 {
		return 0, errno
	}
	return int(flags), nil
}

// TestTooBigFiles checks the size cap: edit_file and search refuse or skip a file larger than
// MaxFileBytes before reading it, read_file shows its head, write_file may still replace it, and a
// file of exactly the cap is edited as usual.
func TestTooBigFiles(t *testing.T) {
	b, _ := newBox(t)
	huge := filepath.Join(b.Root, "huge.txt")
	sparse(t, huge, 200<<20)
	edge := strings.Repeat("x", MaxFileBytes-len("\nneedle\n")) + "\nneedle\n"
	if err := os.WriteFile(filepath.Join(b.Root, "edge.txt"), []byte(edge), 0o644); err != nil {
		t.Fatal(err)
	}
	sparse(t, filepath.Join(b.Root, "sub", "over.txt"), MaxFileBytes+1)
	tests := []struct {
		name    string
		tool    string
		args    map[string]any
		isError bool
		want    string
	}{
		{"edit a huge file", "edit_file", map[string]any{"path": "huge.txt", "old": "no such text", "new": "x"}, true,
			`The file "huge.txt" is 200 MiB, larger than edit_file handles (8 MiB); nothing changed. Use run_command with a tool such as sed to change it.`},
		{"edit one byte over", "edit_file", map[string]any{"path": "sub/over.txt", "old": "a", "new": "b"}, true,
			`The file "sub/over.txt" is 8.0 MiB, larger than edit_file handles (8 MiB)`},
		{"search a huge file", "search", map[string]any{"pattern": "x", "path": "huge.txt"}, true,
			`The file "huge.txt" is 200 MiB, larger than search handles (8 MiB); nothing changed. Use run_command with a tool such as grep to search it.`},
		{"search past huge files", "search", map[string]any{"pattern": "TODO"}, false,
			"a.txt:2: TODO: one\nsub/b.txt:2: TODO: two\n" +
				`[not searched: 2 files larger than 8 MiB ("huge.txt", "sub/over.txt"). Use run_command (for example grep) to search them.]`},
		{"search a file of the cap", "search", map[string]any{"pattern": "needle", "path": "edge.txt"}, false, "edge.txt:2: needle"},
		{"read a huge file", "read_file", map[string]any{"path": "huge.txt"}, false, `"huge.txt" is a binary file of 209715200 bytes`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := snapshot(t, b.Root)
			var res contract.ToolResult
			alloc := allocated(func() { res = callNoBlock(t, b, tt.tool, tt.args) })
			assertUnchanged(t, before, snapshot(t, b.Root))
			if res.IsError != tt.isError || res.Changed || !strings.Contains(res.Content, tt.want) {
				t.Fatalf("result %+v, want IsError=%v, nothing changed and content containing\n%q", res, tt.isError, tt.want)
			}
			if alloc > 2*MaxFileBytes {
				t.Fatalf("the call allocated %d bytes, more than twice the cap", alloc)
			}
		})
	}
	res := callNoBlock(t, b, "edit_file", map[string]any{"path": "edge.txt", "old": "needle", "new": "thread"})
	if res.IsError || !strings.Contains(res.Content, "at line 2") {
		t.Fatalf("edit of a file of exactly the cap: %+v", res)
	}
	res = callNoBlock(t, b, "write_file", map[string]any{"path": "huge.txt", "content": "small now\n"})
	if got, _ := os.ReadFile(huge); res.IsError || string(got) != "small now\n" {
		t.Fatalf("write_file over a huge file: %+v, file %q", res, got)
	}
}

// sparse makes a file of size zero bytes without writing them.
func sparse(t *testing.T, name string, size int64) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// allocated is how many bytes f allocated on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHugeDirectories checks that list_dir and search stop at their entry and time budgets, say so
// with what to do, and still list in name order.
func TestHugeDirectories(t *testing.T) {
	b, _ := newBox(t)
	many := filepath.Join(b.Root, "many")
	if err := os.Mkdir(many, 0o755); err != nil {
		t.Fatal(err)
	}
	const files = 3000
	for i := range files {
		content := ""
		if i%100 == 0 {
			content = "needle\n"
		}
		if err := os.WriteFile(filepath.Join(many, fmt.Sprintf("f%05d", i)), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	forever := time.Hour
	tests := []struct {
		name  string
		run   func() contract.ToolResult
		lines int // lines before the last, which is the cut note
		first string
		want  string
	}{
		{"list within the budget", func() contract.ToolResult { return b.listDir(b.Root, "many", walkLimits{files, forever}) },
			listCap, "f00000 (7 bytes)", "[cut: 2000 more entries are not shown. Use search or list a subdirectory.]"},
		{"list over the entry budget", func() contract.ToolResult { return b.listDir(b.Root, "many", walkLimits{2000, forever}) },
			listCap, "", `[cut: "many" holds more than 2000 entries, more than list_dir reads in one call; these are the first 1000 names, in order, of the 2000 it read. ` +
				"List a subdirectory, or use run_command (for example find with -name) to narrow it down.]"},
		{"list over the time budget", func() contract.ToolResult { return b.listDir(b.Root, "many", walkLimits{files, 0}) },
			entryBatch, "", `[cut: reading "many" took longer than 0s, so list_dir stopped after 1024 entries; these are the first 1000 names`},
		{"search over the entry budget", func() contract.ToolResult { return b.search(b.Root, "needle", ".", walkLimits{1000, forever}) },
			-1, "", `[cut: the search stopped after reading 1000 directory entries, so part of "." was not searched. ` +
				"Search a subdirectory, or use run_command (for example grep -rn) to search all of it.]"},
		{"search over the time budget", func() contract.ToolResult { return b.search(b.Root, "needle", "many", walkLimits{files, 0}) },
			-1, "", `No text file in the part of "many" that was searched contains "needle". Nothing changed.` + "\n" +
				`[cut: the search stopped after 0s, so part of "many" was not searched.`},
		{"search within the budget", func() contract.ToolResult { return b.search(b.Root, "needle", "many", walkLimits{files, forever}) },
			files / 100, "many/f00000:1: needle", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := tt.run()
			if res.IsError || res.Changed || !strings.Contains(res.Content, tt.want) {
				t.Fatalf("result %+v, want a result containing %q", res, tt.want)
			}
			lines := strings.Split(res.Content, "\n")
			if tt.want == "" {
				lines = append(lines, "")
			}
			body := lines[:len(lines)-1]
			if tt.lines >= 0 && len(body) != min(tt.lines, listCap) {
				t.Fatalf("%d lines before the note, want %d", len(body), min(tt.lines, listCap))
			}
			if !slices.IsSorted(body) {
				t.Fatalf("lines not in name order: %q ...", body[:min(5, len(body))])
			}
			if tt.first != "" && body[0] != tt.first {
				t.Fatalf("first line %q, want %q", body[0], tt.first)
			}
		})
	}
}

// TestScanLines checks the streaming line search: very long lines, a match across two read
// chunks, CRLF line ends, a last line without an end, and line numbers after a long line.
func TestScanLines(t *testing.T) {
	long := strings.Repeat("a", searchChunk-3) + "needle" + strings.Repeat("b", 2*searchChunk)
	tests := []struct {
		name    string
		text    string
		pattern string
		want    []string
	}{
		{"short lines", "one\ntwo needle\nthree\n", "needle", []string{"f:2: two needle"}},
		{"across chunks", long + "\nneedle\n", "needle", []string{"f:1: " + strings.Repeat("a", searchMaxLine) + "…", "f:2: needle"}},
		{"long line without a match", long + "\nx\nneedle", "needle x", nil},
		{"line numbers after a long line", strings.Repeat("z", 3*searchChunk) + "\n\nneedle\n", "needle", []string{"f:3: needle"}},
		{"crlf", "a\r\nneedle\r\n", "needle", []string{"f:2: needle"}},
		{"no final line end", "a\nb needle", "needle", []string{"f:2: b needle"}},
		{"binary", "needle\x00\n", "needle", nil},
		{"cut on a character", strings.Repeat("é", searchMaxLine) + " needle", "needle", []string{"f:1: " + strings.Repeat("é", searchMaxLine/2) + "…"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, full := scanLines(strings.NewReader(tt.text), "f", []byte(tt.pattern), nil)
			if full || !slices.Equal(got, tt.want) {
				t.Fatalf("got %q (full %v), want %q", got, full, tt.want)
			}
		})
	}
}

// TestCollapse checks that the one-pass collapse gives what joining the words gives.
func TestCollapse(t *testing.T) {
	for _, s := range []string{"", "  ", "a", " a  b\t\nc ", "x\u00a0y\u2003z", "é \xff  ü", "\n\nfunc  Add(a, b int)\n\treturn\n"} {
		if got, want := collapse(s), strings.Join(strings.Fields(s), " "); got != want {
			t.Errorf("collapse(%q) = %q, want %q", s, got, want)
		}
	}
}
