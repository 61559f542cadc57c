// Package program runs the bots' commands one way: until SIGINT or SIGTERM, with one line on
// stderr for a failure, and an exit code that says whether the configuration was at fault.
package program

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/keelrun/keel/internal/config"
)

// ExitConfig is the exit code of a configuration mistake; any other failure exits 1.
const ExitConfig = 2

// Main runs the command built by newCommand with the process's arguments until SIGINT or SIGTERM
// and exits with Run's code.
func Main(newCommand func(stderr io.Writer) *cobra.Command) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, newCommand(os.Stderr), os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

// Run executes cmd with args and maps its error to an exit code: 0, ExitConfig for a
// configuration mistake (one line naming the key), 1 for anything else. The error is printed
// once, after the command's name.
func Run(ctx context.Context, cmd *cobra.Command, args []string, stderr io.Writer) int {
	cmd.SetArgs(args)
	cmd.SetErr(stderr)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, cmd.Name()+":", err)
	if config.IsError(err) {
		return ExitConfig
	}
	return 1
}
