// Command worker serves Keel's task queue: both workflows and every activity.
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
)

func main() {
	configPath := flag.String("config", "", config.FileHelp)
	flag.Parse()
	cfg, err := config.LoadFor(config.Worker, *configPath, nil, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(2)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := app.RunWorker(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}
