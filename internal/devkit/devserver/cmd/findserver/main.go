// Command findserver prints the path of Keel's Temporal server binary, the one the dev server
// launcher uses (devserver.FindServer: $KEEL_TEMPORAL_SERVER, else the cached build of
// deploy/temporal-server keyed by its content, built first when the cache lacks it). The native
// cluster (deploy/run-cluster.sh) runs that binary, so a machine builds the server once for the
// tests, the dev server and the cluster alike. Progress of a build goes to standard error.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/keelrun/keel/internal/devkit/devserver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bin, err := devserver.FindServer(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "findserver: finding Keel's Temporal server:", err)
		os.Exit(1)
	}
	fmt.Println(bin)
}
