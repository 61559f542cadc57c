package workspace

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/gitserver"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/tools/snapshot"
)

// recordTurns is the length of BenchmarkRecordedSession's session; recordEdit what each turn
// writes into the one file it edits.
const (
	recordTurns = 50
	recordEdit  = 64 << 10
)

// BenchmarkRecordedSession measures what recording a workspace costs the store and what
// restoring it on a fresh host takes: a repository of -repo-mb MiB of random files (1 MiB each),
// a session of recordTurns turns that each rewrites one file with recordEdit random bytes and
// records the workspace in a file store. It reports the store's growth over the turns against the
// bytes the turns wrote (overhead-B/turn is the rest, per record), the time a record takes, and
// the time a host with an empty workspace root and state directory takes to restore the last
// state (a fetch of the repository from a loopback git server included).
func BenchmarkRecordedSession(b *testing.B) {
	srv := gitserver.Start(b, b.TempDir(), "")
	bare, url := srv.Repo(b, "big")
	src := b.TempDir()
	gitserver.Git(b, src, "init", "--quiet", "-b", "main")
	buf := make([]byte, 1<<20)
	for i := range *benchRepoMB {
		_, _ = rand.Read(buf)
		if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("blob-%03d", i)), buf, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	gitserver.Git(b, src, "add", "-A")
	gitserver.Git(b, src, "commit", "--quiet", "-m", "big")
	commit := gitserver.Git(b, src, "rev-parse", "HEAD")
	gitserver.Git(b, src, "push", "--quiet", bare, "main")
	source := contract.Source{Repo: url, Commit: commit}
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		storeDir := b.TempDir()
		st, err := store.OpenFile(storeDir)
		if err != nil {
			b.Fatal(err)
		}
		host := func() *Manager {
			return &Manager{Root: b.TempDir(), States: st, Snapshots: snapshot.New(b.TempDir())}
		}
		a := host()
		ws, err := a.Ensure(ctx, "s", source)
		if err != nil {
			b.Fatal(err)
		}
		record := func(turn int) {
			m, err := a.Snapshots.Take("s", turn, ws.Dir)
			if err != nil {
				b.Fatal(err)
			}
			r, err := a.Fence(ctx, "s", time.Now(), fmt.Sprint("turn ", turn))
			if err != nil {
				b.Fatal(err)
			}
			if err := a.Record(ctx, r, "s", turn, fmt.Sprint("c", turn), a.Snapshots, m); err != nil {
				b.Fatal(err)
			}
		}
		record(0)
		before := treeBytes(storeDir)
		edit := make([]byte, recordEdit)
		var written int64
		start := time.Now()
		for turn := 1; turn <= recordTurns; turn++ {
			_, _ = rand.Read(edit)
			if err := os.WriteFile(filepath.Join(ws.Dir, "blob-000"), edit, 0o644); err != nil {
				b.Fatal(err)
			}
			written += int64(len(edit))
			record(turn)
		}
		perRecord := time.Since(start) / recordTurns
		growth := treeBytes(storeDir) - before

		fresh := host()
		start = time.Now()
		got, err := fresh.Ensure(ctx, "s", source)
		restore := time.Since(start)
		if err != nil || got.Restored == nil || got.Restored.Turn != recordTurns {
			b.Fatalf("restore on a fresh host: %+v, %v", got, err)
		}
		if on, _ := os.ReadFile(filepath.Join(got.Dir, "blob-000")); !bytes.Equal(on, edit) {
			b.Fatal("the restored workspace does not hold the last turn's edit")
		}
		b.ReportMetric(float64(before)/(1<<20), "first-record-MiB")
		b.ReportMetric(float64(growth)/(1<<20), "growth-MiB")
		b.ReportMetric(float64(written)/(1<<20), "written-MiB")
		b.ReportMetric(float64(growth-written)/recordTurns, "overhead-B/turn")
		b.ReportMetric(float64(perRecord.Milliseconds()), "record-ms")
		b.ReportMetric(restore.Seconds(), "restore-s")
	}
}

// treeBytes is the size of every file under dir.
func treeBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
