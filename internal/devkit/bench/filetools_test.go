package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools"
)

// hostileRSSBound is the most resident memory the process may reach while a hostile session's
// file tool calls run (docs/benchmarks.md, section 9, states it with the measured numbers). Before
// the file tools were bounded, one edit_file on the 200 MiB file below took a worker from 64 MB
// to 2.1 GB.
const hostileRSSBound = 128 << 20

// hostileCallTimeout is how long one call may take before it counts as blocked. Bounded calls take
// well under a second; one that waits on a named pipe never returns.
const hostileCallTimeout = 60 * time.Second

// Sizes of the hostile work directory: the file from the report that took a worker to 2.1 GB,
// and a folder far larger than a walk reads.
const (
	hostileBigFile = 200 << 20
	hostileEntries = 100_000
)

// hostileCall is one file tool call of the hostile session and a piece of the result that shows
// the tool did what it should (refused, cut or skipped), so the bound is measured on correct
// behaviour.
type hostileCall struct {
	tool string
	args map[string]any
	want string
}

// hostileCalls are what a model that wants to take the worker down tries with the file tools: a
// huge file edited with text that does not match, read and searched; a named pipe given to every
// tool; /dev/null linked into the work directory; a folder of 100,000 entries listed and searched;
// and the largest edits and searches the tools do accept.
var hostileCalls = []hostileCall{
	{"edit_file", map[string]any{"path": "big.txt", "old": "no such text", "new": "x"}, "larger than edit_file handles"},
	{"read_file", map[string]any{"path": "big.txt"}, "[cut: the file"},
	{"search", map[string]any{"pattern": "needle", "path": "big.txt"}, "larger than search handles"},
	{"search", map[string]any{"pattern": "needle"}, "oneline.txt:1: "},
	{"list_dir", map[string]any{"path": "many"}, `[cut: "many" holds more than`},
	{"search", map[string]any{"pattern": "needle", "path": "many"}, "[cut: the search stopped after reading"},
	{"read_file", map[string]any{"path": "pipe"}, "is a named pipe"},
	{"edit_file", map[string]any{"path": "pipe", "old": "a", "new": "b"}, "is a named pipe"},
	{"write_file", map[string]any{"path": "pipe", "content": "x"}, "is a named pipe"},
	{"list_dir", map[string]any{"path": "pipe"}, "is a named pipe"},
	{"search", map[string]any{"pattern": "a", "path": "pipe"}, "is a named pipe"},
	{"read_file", map[string]any{"path": "null"}, "through a symbolic link"},
	{"edit_file", map[string]any{"path": "edge.txt", "old": "no such  text", "new": "x"}, "was not found"},
	{"edit_file", map[string]any{"path": "edge.txt", "old": "MARK-A", "new": "MARK-B"}, "Replaced 1 occurrence"},
	{"edit_file", map[string]any{"path": "edge.txt", "old": "MARK-B", "new": "MARK-A"}, "Replaced 1 occurrence"},
}

// BenchmarkHostileFileTools runs a hostile session's file tool calls (hostileCalls) through
// tools.Box.Run, the function the RunTool activity calls, in this process, which links the
// worker's packages as the worker does. It reports the process's resident memory at the start,
// at its peak (VmHWM, reset before each call, so the call that set it is known) and at the end,
// and the slowest call, and fails when the peak passes hostileRSSBound or a call blocks or
// misbehaves.
//
//	go test ./internal/devkit/bench -run '^$' -bench HostileFileTools -benchtime 1x -v
func BenchmarkHostileFileTools(b *testing.B) {
	box := &tools.Box{Root: hostileWorkdir(b)}
	debug.FreeOSMemory() // the setup's buffers are not the session's
	start, err := RSS()
	if err != nil {
		b.Fatal(err)
	}
	var peak, slowest hostileMeasure
	for b.Loop() {
		for _, c := range hostileCalls {
			m := runHostile(b, box, c)
			if m.rss > peak.rss {
				peak = m
			}
			if m.took > slowest.took {
				slowest = m
			}
		}
	}
	end, err := RSS()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(MiB(start), "start-rss-MiB")
	b.ReportMetric(MiB(peak.rss), "peak-rss-MiB")
	b.ReportMetric(MiB(end), "end-rss-MiB")
	b.ReportMetric(Ms(slowest.took), "slowest-call-ms")
	b.Logf("%d calls a session; RSS %.0f MiB at the start, %.0f MiB at the peak (during %s), %.0f MiB at the end; slowest call %.0f ms (%s)",
		len(hostileCalls), MiB(start), MiB(peak.rss), peak.call, MiB(end), Ms(slowest.took), slowest.call)
	if peak.rss > hostileRSSBound {
		b.Fatalf("peak RSS %.0f MiB is above the bound of %.0f MiB", MiB(peak.rss), MiB(hostileRSSBound))
	}
}

// hostileMeasure is what one hostile call cost: the peak RSS while it ran, and its time.
type hostileMeasure struct {
	call string
	rss  int64
	took time.Duration
}

// runHostile runs one call and measures it, failing the benchmark when the call does not return
// within hostileCallTimeout or its result lacks what it should say.
func runHostile(b *testing.B, box *tools.Box, c hostileCall) hostileMeasure {
	b.Helper()
	args, err := json.Marshal(c.args)
	if err != nil {
		b.Fatal(err)
	}
	if err := ResetPeakRSS(); err != nil {
		b.Fatal(err)
	}
	got := make(chan contract.ToolResult, 1)
	began := time.Now()
	go func() {
		got <- box.Run(context.Background(), contract.ToolCall{ID: "hostile", Name: c.tool, Arguments: string(args)})
	}()
	select {
	case res := <-got:
		if !strings.Contains(res.Content, c.want) {
			b.Fatalf("%s %s: %q, want it to contain %q", c.tool, args, res.Content, c.want)
		}
	case <-time.After(hostileCallTimeout):
		b.Fatalf("%s %s did not return within %s", c.tool, args, hostileCallTimeout)
	}
	took := time.Since(began)
	rss, err := PeakRSS()
	if err != nil {
		b.Fatal(err)
	}
	return hostileMeasure{call: fmt.Sprintf("%s %s", c.tool, args), rss: rss, took: took}
}

// hostileWorkdir makes the hostile session's work directory: big.txt (hostileBigFile bytes of
// text), edge.txt (text of exactly tools.MaxFileBytes, spaced so that a near miss is looked for,
// with one MARK-A), oneline.txt (one line of almost that size ending in needle), a named pipe, a
// link to /dev/null, and many/ with hostileEntries empty files.
func hostileWorkdir(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	writeText(b, filepath.Join(dir, "big.txt"), "line of a large file, with  nothing  to find in it\n", hostileBigFile)
	edge := strings.Repeat("word  word\tword\n", tools.MaxFileBytes/16)
	edge = "MARK-A\n" + edge[len("MARK-A\n"):]
	if err := os.WriteFile(filepath.Join(dir, "edge.txt"), []byte(edge), 0o644); err != nil {
		b.Fatal(err)
	}
	oneline := strings.Repeat("x", tools.MaxFileBytes-len("needle")) + "needle"
	if err := os.WriteFile(filepath.Join(dir, "oneline.txt"), []byte(oneline), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Symlink("/dev/null", filepath.Join(dir, "null")); err != nil {
		b.Fatal(err)
	}
	many := filepath.Join(dir, "many")
	if err := os.Mkdir(many, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range hostileEntries {
		f, err := os.Create(filepath.Join(many, fmt.Sprintf("f%06d", i)))
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// writeText writes size bytes to name, line after line, through a small buffer, so making the
// file costs the benchmark no memory.
func writeText(b *testing.B, name, line string, size int) {
	b.Helper()
	f, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for written := 0; written < size; {
		n, err := w.WriteString(line[:min(len(line), size-written)])
		if err != nil {
			b.Fatal(err)
		}
		written += n
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}
