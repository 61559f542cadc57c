// Command starter starts, watches and steers Keel agent sessions: `go run ./starter demo`.
package main

import (
	"context"
	"os"

	"github.com/keelrun/keel/internal/cli"
)

func main() {
	os.Exit(cli.Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
