// Command buildserver builds Keel's Temporal server (deploy/temporal-server) into the cache the
// devserver launcher reads, and prints its path. CI runs it before the tests, so no test waits on
// the build; on a machine where it is built already it returns at once.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/keelrun/keel/internal/devkit/devserver"
)

func main() {
	bin, err := devserver.FindServer(context.Background(), os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "buildserver:", err)
		os.Exit(1)
	}
	fmt.Println(bin)
}
