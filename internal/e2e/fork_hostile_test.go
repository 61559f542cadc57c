//go:build linux

package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/devkit/testenv"
	"github.com/keelrun/keel/internal/tools/snapshot"
)

// forkAtOnce bounds `starter fork` of the planted tree, the fork's own short session included:
// a fork that opened the named pipe would wait for a writer forever.
const forkAtOnce = 60 * time.Second

// TestForkOfAHostileTree: a scripted hostile model plants, at turn 1, a link to a host file, a
// named pipe, a sparse file, a 100 MB sparse file and a 9 MB file (both over what a snapshot
// keeps), and two names that are not UTF-8 and that a JSON string turns into one: a link to a
// folder outside and a folder holding a file. At turn 2 it swaps the big file, which the
// snapshot skipped, for a link to a root-only host file. `fork --turn 1` then copies no host file,
// creates nothing outside its target, finishes within forkAtOnce despite the pipe, keeps the
// sparse file sparse, and restores both names byte for byte.
func TestForkOfAHostileTree(t *testing.T) {
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	environ := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL="+gw.BaseURL()+"/v1")
	workerBin, err := env.Build("./worker")
	if err != nil {
		t.Fatal(err)
	}
	w := &workerProc{bin: workerBin, env: environ, t: t}
	w.start()
	defer w.kill()

	outside := t.TempDir()
	secret := "HOST-CANARY-" + fmt.Sprint(time.Now().UnixNano())
	if err := os.WriteFile(filepath.Join(outside, "canary"), []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(outside, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README"), []byte("a project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plant := fmt.Sprintf(`sh -c 'ln -s %[1]s/canary hostlink && mkfifo fifo && truncate -s 6M sparse && printf end >> sparse && `+
		`truncate -s 100M bigsparse && head -c 9000000 /dev/zero | tr "\0" x > big && `+
		`ln -s %[1]s/dir "$(printf "x\376")" && mkdir "$(printf "x\377")" && echo planted > "$(printf "x\377")/planted"'`, outside)
	swap := fmt.Sprintf(`sh -c 'rm -f big && ln -s %s/canary big'`, outside)
	task := fakegw.CommandsTask("Plant a tree for fork.", plant, swap)

	orig := runIn(t, environ, "run", "--workdir", ws, "--output", "jsonl", task)
	if orig.Code != 0 || orig.Summary.Status != contract.StatusCompleted {
		t.Fatalf("the session: exit %d, summary %+v\n%s", orig.Code, orig.Summary, orig.Stderr)
	}
	for _, e := range orig.Events {
		if e.Event == contract.EventToolResult && e.IsError {
			t.Fatalf("a planting command failed: %s", e.Text)
		}
	}
	if l, err := os.Readlink(filepath.Join(ws, "big")); err != nil || !strings.HasSuffix(l, "/canary") {
		t.Fatalf("the swap did not happen: %q, %v", l, err)
	}

	dst := filepath.Join(t.TempDir(), "fork")
	ctx, cancel := context.WithTimeout(context.Background(), 2*forkAtOnce)
	defer cancel()
	cmd := exec.CommandContext(ctx, starter, "fork", orig.Summary.WorkflowID, "--turn", "1", "--workdir", dst, "--output", "jsonl")
	cmd.Env = environ
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fork, err := testenv.Finish(cmd, &stdout, &stderr)
	took := time.Since(start)
	t.Logf("fork --turn 1 of the planted tree took %s (bound %s)", took.Round(time.Millisecond), forkAtOnce)
	if took > forkAtOnce {
		t.Errorf("the fork took %s, over %s: something waited on the named pipe", took, forkAtOnce)
	}
	if err != nil || fork.Code != 0 {
		t.Errorf("the fork: exit %d, %v\n%s", fork.Code, err, fork.Stderr)
	}

	// No host file in the fork: no regular file holds the canary, and what the snapshot skipped
	// (the big files, the pipe) is not there at all.
	_ = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(secret)) {
				t.Errorf("the fork copied the host's canary into %q", p)
			}
		}
		return nil
	})
	// (The fork's own turn 2 makes big a link again, in the fork's directory.)
	for _, name := range []string{"big", "bigsparse", "fifo"} {
		if info, err := os.Lstat(filepath.Join(dst, name)); err == nil && info.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("the fork has %s, which the snapshot skipped", name)
		}
	}
	if l, err := os.Readlink(filepath.Join(dst, "hostlink")); err != nil || l != filepath.Join(outside, "canary") {
		t.Errorf("hostlink in the fork: %q, %v; want the link kept as a link", l, err)
	}
	// Nothing outside the target.
	if names, _ := os.ReadDir(filepath.Join(outside, "dir")); len(names) > 0 {
		t.Errorf("the fork created %q outside its target", names[0].Name())
	}
	if names, _ := os.ReadDir(outside); len(names) != 2 {
		t.Errorf("the folder outside holds %d entries, want 2 (canary, dir)", len(names))
	}
	// Sparse stays sparse.
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dst, "sparse"), &st); err != nil {
		t.Errorf("the sparse file: %v", err)
	} else if st.Size != 6<<20+3 || st.Blocks*512 > 1<<20 {
		t.Errorf("the sparse file in the fork: %d bytes in %d KiB of blocks; want %d bytes in under 1 MiB", st.Size, st.Blocks/2, 6<<20+3)
	}
	if u := diskUsage(dst); u > 4<<20 {
		t.Errorf("the fork's directory takes %d KiB on disk", u>>10)
	}
	// Both names byte for byte.
	if l, err := os.Readlink(filepath.Join(dst, "x\376")); err != nil || l != filepath.Join(outside, "dir") {
		t.Errorf(`"x\376" in the fork: %q, %v; want the link`, l, err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "x\377", "planted")); err != nil || string(b) != "planted\n" {
		t.Errorf(`"x\377"/planted in the fork: %q, %v`, b, err)
	}
	// What the fork says it lacks is quoted.
	for _, e := range fork.Events {
		if strings.Contains(e.Text, "not in the fork") && !strings.Contains(e.Text, "big") {
			t.Errorf("the fork's note does not name the skipped files: %q", e.Text)
		}
	}
}

// churnMB is what each turn of TestSnapshotsStayUnderTheirLimit writes. At the default the test
// runs in CI with small limits; docs/benchmarks.md §11 runs it once at 300 with the documented
// default snapshots.session_mb.
var churnMB = flag.Int("churn-mb", 30, "TestSnapshotsStayUnderTheirLimit: MB of new content each turn writes (above 30: the default session limit)")

// TestSnapshotsStayUnderTheirLimit: a 50-turn session that writes -churn-mb MB of new content
// (files of 7.5 MB, each under the largest file a snapshot keeps) and deletes the last turn's
// each turn leaves the state directory's snapshots under snapshots.session_mb, the user is told
// when a snapshot leaves content out, and `starter prune` brings the snapshots to
// snapshots.keep_mb after saying, in a dry run, what it would remove. At the default 30 MB the
// limits are 40 and 8 MiB; above it, snapshots.session_mb is its documented default and
// snapshots.keep_mb a quarter of that.
func TestSnapshotsStayUnderTheirLimit(t *testing.T) {
	const turns, fileBytes = 50, 7_500_000
	limitMB, keepMB := 40, 8
	extra := []string{fmt.Sprint("KEEL_SNAPSHOTS_SESSION_MB=", limitMB)}
	if *churnMB > 30 {
		def, _ := config.Lookup(config.SnapshotsSessionMB)
		limitMB = def.Default.(int)
		keepMB = limitMB / 4
		extra = nil
	}
	files := max(1, (*churnMB*1_000_000+fileBytes-1)/fileBytes)
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	environ := env.StarterEnv(t, append(extra, "KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL="+gw.BaseURL()+"/v1",
		fmt.Sprint("KEEL_SNAPSHOTS_KEEP_MB=", keepMB))...)
	workerBin, err := env.Build("./worker")
	if err != nil {
		t.Fatal(err)
	}
	w := &workerProc{bin: workerBin, env: environ, t: t}
	w.start()
	defer w.kill()
	ws := t.TempDir()
	var cmds []string
	for i := 1; i <= turns; i++ {
		cmds = append(cmds, fmt.Sprintf(`sh -c 'rm -f f*; i=0; while [ $i -lt %d ]; do i=$((i+1)); head -c %d /dev/urandom > f$i; done' turn-%d`, files, fileBytes, i))
	}
	start := time.Now()
	run := runIn(t, environ, "run", "--workdir", ws, "--output", "jsonl", "--max-turns", "60", "--max-tokens", "100000000", "--max-duration", "3h",
		fakegw.CommandsTask("Churn the disk.", cmds...))
	if run.Code != 0 || run.Summary.Status != contract.StatusCompleted {
		t.Fatalf("the session: exit %d, summary %+v\n%s", run.Code, run.Summary, run.Stderr)
	}
	snaps := snapshot.Dir(envValue(environ, "KEEL_DEV_STATE_DIR"))
	used := diskUsage(snaps)
	t.Logf("%d turns of %d MB each (%d files) in %s; the snapshots take %.1f MiB (limit %d MiB; without it about %d MB)",
		turns, *churnMB, files, time.Since(start).Round(time.Second), float64(used)/(1<<20), limitMB, turns*files*fileBytes/1_000_000)
	if used > int64(limitMB)<<20 {
		t.Fatalf("the snapshots take %d bytes, over their limit of %d MiB", used, limitMB)
	}
	told := 0
	for _, e := range run.Events {
		if e.Event == contract.EventNotice && strings.Contains(e.Text, "snapshots.session_mb") {
			told++
		}
	}
	if told == 0 {
		t.Fatal("the user was never told that a snapshot left content out")
	}

	dry := runPlain(t, environ, "prune", "--dry-run")
	if dry.Code != 0 || !strings.Contains(dry.Stdout, "would remove") {
		t.Fatalf("prune --dry-run: exit %d\n%s%s", dry.Code, dry.Stdout, dry.Stderr)
	}
	if u := diskUsage(snaps); u != used {
		t.Fatalf("prune --dry-run changed the snapshots: %d bytes, then %d", used, u)
	}
	pruneStart := time.Now()
	pr := runPlain(t, environ, "prune")
	after := diskUsage(snaps)
	t.Logf("prune --dry-run:\n%sprune (%s):\n%sthe snapshots take %.1f MiB (keep %d MiB)",
		dry.Stdout, time.Since(pruneStart).Round(time.Millisecond), pr.Stdout, float64(after)/(1<<20), keepMB)
	if pr.Code != 0 || after > int64(keepMB)<<20 {
		t.Fatalf("prune: exit %d, the snapshots take %d bytes, want at most %d MiB\n%s%s", pr.Code, after, keepMB, pr.Stdout, pr.Stderr)
	}
}

// diskUsage is the disk space everything under dir takes (allocated blocks, as du counts).
func diskUsage(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			}
		}
		return nil
	})
	return n
}

// runPlain runs the starter for a command that prints text, not events.
func runPlain(t *testing.T, environ []string, args ...string) testenv.Run {
	t.Helper()
	cmd := exec.Command(starter, args...)
	cmd.Env = environ
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := testenv.Run{Code: cmd.ProcessState.ExitCode(), Stdout: stdout.String(), Stderr: stderr.String()}
	if err != nil && r.Code < 0 {
		t.Fatalf("starter %v: %v", args, err)
	}
	return r
}
