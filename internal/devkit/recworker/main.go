// Command recworker is Keel's worker with a side-effect log: every tool execution is appended to
// the file named by -effect-log before the tool runs. The chaos test and the failover drill read
// it to prove that no tool call ran twice; production workers run ./worker, which has no log.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/keelrun/keel/internal/app"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/devkit/toolhooks"
)

func main() {
	configPath := flag.String("config", "", config.FileHelp)
	effectLog := flag.String("effect-log", "", "file that gets one JSON line per tool execution (required)")
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
	if err := app.RunWorker(ctx, cfg, toolhooks.RecordEffects(*effectLog)); err != nil {
		fmt.Fprintln(os.Stderr, "recworker:", err)
		os.Exit(1)
	}
}
