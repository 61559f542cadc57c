package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// benchTimeout bounds any one benchmark, server start included.
const benchTimeout = 9 * time.Minute

// startServer starts a dev server for one benchmark and stops it when the benchmark ends.
func startServer(tb testing.TB, ctx context.Context, dyn map[string]string) *Server {
	tb.Helper()
	srv, err := StartServer(ctx, dyn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = srv.Stop() })
	return srv
}

// startRig starts an in-process worker on srv with its own task queue and folder.
func startRig(tb testing.TB, srv *Server, opts RigOptions) *Rig {
	tb.Helper()
	if opts.TaskQueue == "" {
		opts.TaskQueue = "bench-" + strings.NewReplacer("/", "-", " ", "-").Replace(tb.Name())
	}
	if opts.Dir == "" {
		opts.Dir = tb.TempDir()
	}
	r, err := NewRig(context.Background(), srv.Address(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(r.Stop)
	return r
}

// benchContext is the deadline of one benchmark.
func benchContext(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), benchTimeout)
	tb.Cleanup(cancel)
	return ctx
}

// uniq names workflows so repeated iterations never collide.
var uniqSeq int

func uniq(prefix string) string {
	uniqSeq++
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e9, uniqSeq)
}
