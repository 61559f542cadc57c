// Package cli is the starter's command line: demo, run, dev, and the commands that steer running
// sessions (cancel, answer, escalations). starter/main.go only calls Run; tests run commands in
// process with Run or Main. Sessions are reached through internal/session and the terminal's
// questions are internal/tui's state machine.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/keelrun/keel/internal/config"
)

// Exit statuses of the starter.
const (
	ExitOK        = 0
	ExitFailure   = 1
	ExitUsage     = 2
	ExitLimit     = 3
	ExitCancelled = 130
)

// exitError carries an exit status out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

// Unwrap exposes the error, so callers can ask what kind it is (a configuration error, for one).
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// globals are the flags every command shares.
type globals struct {
	configPath string
	stdout     io.Writer
	stderr     io.Writer
}

// load reads the configuration with this command's flags applied, for a command that may run a
// worker in-process (it needs a provider's key unless the fake gateway serves it); a bad value is
// a usage error.
func (g *globals) load(cmd *cobra.Command, overrides map[string]any) (config.Config, error) {
	return g.loadFor(cmd, config.Worker|config.Starter, overrides)
}

// loadFor is load for the programs prog: config.Starter alone for a command that only talks to
// Temporal and so needs no provider's key.
func (g *globals) loadFor(cmd *cobra.Command, prog config.Program, overrides map[string]any) (config.Config, error) {
	cfg, err := config.LoadFor(prog, g.configPath, cmd.Flags(), overrides)
	if err != nil {
		return config.Config{}, &exitError{code: ExitUsage, err: err}
	}
	return cfg, nil
}

// Main is Run with no standard input, as for a starter that no person types at.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return Run(ctx, args, nil, stdout, stderr)
}

// Run runs the starter with args and returns its exit status. Keys are read from stdin only when
// it is a terminal (an *os.File a person types at); anything else, nil included, is never read.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	useTerminal(stdin)
	signal.Notify(brokenPipe, syscall.SIGPIPE)
	root := newRoot(&globals{stdout: stdout, stderr: stderr})
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "starter:", indent(sanitize(ee.err.Error())))
		}
		return ee.code
	}
	// An error may quote a session, a file name or a server: it is printed harmless.
	fmt.Fprintln(stderr, "starter:", indent(sanitize(err.Error())))
	if isUsage(err) {
		return ExitUsage
	}
	return ExitFailure
}

// newRoot builds the starter's command tree, every command's argument errors showing its usage.
func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:           "starter",
		Short:         "Start, watch and steer Keel agent sessions",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(g.stdout)
	root.SetErr(g.stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&g.configPath, "config", "", config.FileHelp)
	config.AddFlags(pf, config.TemporalAddress, config.TemporalNamespace, config.DevStateDir)
	root.AddCommand(demoCmd(g), runCmd(g), devCmd(g), cancelCmd(g), answerCmd(g), escalationsCmd(g), listCmd(g), gatewayCmd(g),
		attemptsCmd(g), watchCmd(g), forkCmd(g), continueCmd(g), selftestCmd(g), approveCmd(g), sayCmd(g), interruptCmd(g), codecServerCmd(g), releaseCmd(g))
	root.AddCommand(pruneCmd(g), diffCmd(g), undoCmd(g))
	groupCommands(root)
	completeSessionIDs(g, root)
	for _, c := range root.Commands() {
		withUsage(c)
	}
	root.SetFlagErrorFunc(usageHelp)
	return root
}

// commandGroups puts the commands a newcomer reaches for first at the top of --help: how to start a
// session, then how to watch and answer one; everything else (a command not named here too) is
// under Operate.
var commandGroups = map[string]string{
	"demo": "start", "run": "start", "dev": "start", "fork": "start", "continue": "start",
	"watch": "steer", "list": "steer", "escalations": "steer", "answer": "steer", "approve": "steer",
	"say": "steer", "interrupt": "steer", "cancel": "steer", "attempts": "steer", "diff": "steer", "undo": "steer",
}

// groupCommands sorts the root's commands into the groups --help lists them in.
func groupCommands(root *cobra.Command) {
	root.AddGroup(&cobra.Group{ID: "start", Title: "Start here:"}, &cobra.Group{ID: "steer", Title: "Watch and answer:"},
		&cobra.Group{ID: "operate", Title: "Operate:"})
	for _, c := range root.Commands() {
		c.GroupID = "operate"
		if g, ok := commandGroups[c.Name()]; ok {
			c.GroupID = g
		}
	}
	root.SetHelpCommandGroupID("operate")
	root.SetCompletionCommandGroupID("operate")
}

// isUsage recognises cobra's own argument and flag errors.
func isUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires ", "invalid argument", "flag needs"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// exampleID is the session ID the commands' examples use.
const exampleID = "keel-run-20260102-150405-a1b2c3"

// withUsage makes a command's argument errors say how to call it: cobra's own message ("accepts 3
// arg(s), received 1") then the usage line and the command's examples, with exit 2.
func withUsage(cmd *cobra.Command) {
	args := cmd.Args
	if args == nil {
		return
	}
	cmd.Args = func(c *cobra.Command, a []string) error {
		if err := args(c, a); err != nil {
			return usageHelp(c, err)
		}
		return nil
	}
}

// usageHelp is err with the command's usage line and examples: a usage error (exit 2).
func usageHelp(c *cobra.Command, err error) error {
	msg := fmt.Sprintf("%v\nusage: %s", err, c.UseLine())
	if c.Example != "" {
		msg += "\nexample:\n" + c.Example
	}
	msg += fmt.Sprintf("\n(%s --help says more)", c.CommandPath())
	return &exitError{code: ExitUsage, err: errors.New(msg)}
}
