// Command recworker is Keel's worker with a side-effect log: every tool execution is appended to
// the file named by -effect-log before the tool runs. The chaos test and the failover drill read
// it to prove that no tool call ran twice; production workers run ./worker, which has no log.
//
// Built with -tags keel_drill_b it is the deploy drill's second build: a release that rewords
// every built-in tool and changes the session workflow behind a version marker (nextbuild.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/keelrun/keel/activities"
	"github.com/keelrun/keel/internal/app"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/toolhooks"
	"github.com/keelrun/keel/internal/store"
)

func main() {
	configPath := flag.String("config", "", config.FileHelp)
	effectLog := flag.String("effect-log", "", "file that gets one JSON line per tool execution (required)")
	dieAtClaim := flag.String("die-at-claim", "", "session whose first ledger claim kills this worker with SIGKILL, before the claim is written (the failover drill's worker that dies before a command starts)")
	hold := flag.String("hold", "", "file every tool execution waits for, after its log line, before it runs (the deploy drill keeps turns mid-tool while it releases)")
	flag.Parse()
	if *effectLog == "" {
		fmt.Fprintln(os.Stderr, "recworker: -effect-log is required")
		os.Exit(2)
	}
	cfg, err := config.LoadFor(config.Worker, *configPath, nil, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "recworker:", err)
		os.Exit(2)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	wiring := app.Wiring{Hooks: []app.ToolHook{toolhooks.RecordEffects(*effectLog)}}
	if *hold != "" {
		wiring.Hooks = append([]app.ToolHook{holdUntil(*hold)}, wiring.Hooks...)
	}
	if *dieAtClaim != "" {
		wiring.Store = func(s store.Store) store.Store { return dieAtClaimOf{Store: s, session: *dieAtClaim} }
	}
	nextBuild(&wiring)
	if err := app.RunWorkerWith(ctx, cfg, wiring); err != nil {
		fmt.Fprintln(os.Stderr, "recworker:", err)
		os.Exit(1)
	}
}

// dieAtClaimOf is a store whose ledger claim for one session kills the process first, as a worker
// that crashes after its tool call started and before the call was claimed.
type dieAtClaimOf struct {
	store.Store
	session string
}

func (s dieAtClaimOf) Claim(ctx context.Context, k store.LedgerKey) error {
	if k.SessionID == s.session {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	return s.Store.Claim(ctx, k)
}

// holdUntil makes every tool execution wait until path exists (or the call is cancelled) before
// it runs. The activity heartbeats meanwhile, as it does around any tool.
func holdUntil(path string) app.ToolHook {
	return func(next activities.ToolRunner) activities.ToolRunner {
		return activities.ToolRunnerFunc(func(ctx context.Context, req contract.ToolRequest) (contract.ToolResult, error) {
			for {
				if _, err := os.Stat(path); err == nil {
					return next.Run(ctx, req)
				}
				select {
				case <-ctx.Done():
					return contract.ToolResult{}, ctx.Err()
				case <-time.After(100 * time.Millisecond):
				}
			}
		})
	}
}
