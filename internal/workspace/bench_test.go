package workspace

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/gitserver"
)

var benchRepoMB = flag.Int("repo-mb", 20, "BenchmarkTenthSession: the repository's size in MiB of incompressible files")

// BenchmarkTenthSession measures what the object cache saves: the first session on a repository
// fetches it from a loopback git server, the tenth finds its commit in the cache. It reports both
// times and their ratio (tenth/first); the origin holds -repo-mb MiB of random files in 1 MiB
// pieces, so packing cannot shrink it.
func BenchmarkTenthSession(b *testing.B) {
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
	b.ResetTimer()
	for range b.N {
		m := &Manager{Root: b.TempDir()}
		var first, tenth time.Duration
		for s := 1; s <= 10; s++ {
			start := time.Now()
			ws, err := m.Ensure(context.Background(), fmt.Sprint("s", s), contract.Source{Repo: url, Commit: commit})
			if err != nil {
				b.Fatal(err)
			}
			took := time.Since(start)
			switch s {
			case 1:
				first = took
			case 10:
				tenth = took
				if ws.Fetched {
					b.Fatal("the tenth session fetched from the origin")
				}
			}
		}
		b.ReportMetric(first.Seconds(), "first-s")
		b.ReportMetric(tenth.Seconds(), "tenth-s")
		b.ReportMetric(tenth.Seconds()/first.Seconds(), "tenth/first")
	}
}
