package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"

	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/config"
)

// ProcessQueue is the task queue of the worker a starter process brings for its own session (demo,
// run --dev): base with a suffix of this process alone. The session is then served by that worker
// only, with its gateway, its tool hooks and its injected faults, and that worker takes no session
// of another starter; `starter dev`, which serves other starters, keeps the configured queue.
func ProcessQueue(base string) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-dev-%d-%s", base, os.Getpid(), hex.EncodeToString(b))
}

// StartWorker runs a worker in this process against gatewayURL, with hooks around its tool runner,
// until stop is called.
func StartWorker(ctx context.Context, c client.Client, cfg config.Config, gatewayURL string, hooks ...ToolHook) (stop func(), err error) {
	acts, closeDeps, err := Activities(ctx, cfg, gatewayURL, hooks...)
	if err != nil {
		return nil, err
	}
	w := NewWorker(c, cfg, acts)
	if err := w.Start(); err != nil {
		closeDeps()
		return nil, fmt.Errorf("starting the worker: %w", err)
	}
	return func() { w.Stop(); closeDeps() }, nil
}
