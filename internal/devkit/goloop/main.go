// Command goloop is the plain Go agent loop the turn-cost benchmark measures Keel against, in
// the shape of Temporal's published Go agent (temporalio/ai-cookbook): one workflow that calls the
// model as an activity, runs the tool the model asked for as another activity, appends the result
// and loops until the model answers. It is a worker process of its own; the benchmark starts its
// workflows by client.
//
//	goloop -address 127.0.0.1:7233 -task-queue loop -gateway http://127.0.0.1:8080/v1 -workdir DIR
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
)

func main() {
	address := flag.String("address", "127.0.0.1:7233", "Temporal frontend host:port")
	queue := flag.String("task-queue", "goloop", "task queue to poll")
	gateway := flag.String("gateway", "", "the model gateway's OpenAI base URL, with /v1")
	workdir := flag.String("workdir", ".", "the directory list_dir lists")
	flag.Parse()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, *address, *queue, *gateway, *workdir); err != nil {
		fmt.Fprintln(os.Stderr, "goloop:", err)
		os.Exit(1)
	}
}

// run serves the loop's workflow and activities until ctx ends.
func run(ctx context.Context, address, queue, gateway, workdir string) error {
	if gateway == "" {
		return fmt.Errorf("no -gateway: name the model gateway's base URL")
	}
	c, err := client.DialContext(ctx, client.Options{
		HostPort: address,
		Logger:   log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	})
	if err != nil {
		return fmt.Errorf("connecting to Temporal at %s: %w", address, err)
	}
	defer c.Close()
	w := worker.New(c, queue, worker.Options{})
	register(w, newActivities(gateway, workdir))
	if err := w.Start(); err != nil {
		return fmt.Errorf("starting the worker: %w", err)
	}
	fmt.Println("goloop ready")
	<-ctx.Done()
	w.Stop()
	return nil
}
