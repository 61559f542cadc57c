package cli

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/keelrun/keel/internal/app"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/devkit/demo"
	"github.com/keelrun/keel/internal/devkit/devstack"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/devkit/flakymcp/flaky"
	"github.com/keelrun/keel/internal/devkit/toolhooks"
)

// InjectModes are the faults `demo --inject` accepts: gateway faults, model behaviours and tool
// hooks of the fake gateway and the tools.
var InjectModes = fakegw.Modes

// injectHelp lists the fault modes with what each does, one line each, for `demo --help`.
func injectHelp() string {
	var b strings.Builder
	b.WriteString("Fault modes (--inject MODE):\n")
	width := 0
	for _, m := range fakegw.ModeTable {
		width = max(width, len(m.Name))
	}
	for _, m := range fakegw.ModeTable {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, m.Name, m.Does)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

const demoTask = "The tests of the Go package in the work directory fail. Find the bug, fix it, and make `go test ./...` pass."

func addLimitFlags(cmd *cobra.Command) {
	config.AddFlags(cmd.Flags(), config.LimitsMaxTurns, config.LimitsMaxDuration, config.LimitsMaxTokens, config.LimitsContextTokens,
		config.GatewayProvider, config.GatewayModel)
}

func demoCmd(g *globals) *cobra.Command {
	var inject, output, until string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the built-in demo: a scripted model fixes a failing Go test in a fresh workspace",
		Long: "Run the built-in demo: a scripted model fixes a failing Go test in a fresh workspace, on a worker in\n" +
			"this process that serves the demo alone, so an injected fault always takes effect.\n\n" + injectHelp(),
		Example: "  starter demo\n  starter demo --inject tool_error\n  starter demo --inject long_command --max-duration 5s",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if inject != "" && !slices.Contains(InjectModes, inject) {
				return usageErr("--inject %q is not one of: %s", inject, strings.Join(InjectModes, ", "))
			}
			p, err := newPrinter(output, g.stdout)
			if err != nil {
				return err
			}
			cfg, err := g.load(cmd, map[string]any{config.GatewayFake: true})
			if err != nil {
				return err
			}
			return runDemo(cmd.Context(), g, cfg, p, inject, output, until)
		},
	}
	cmd.Flags().StringVar(&inject, "inject", "", "inject a fault, one of the modes listed above")
	outputFlag(cmd, &output)
	untilFlag(cmd, &until)
	addLimitFlags(cmd)
	return cmd
}

func runDemo(ctx context.Context, g *globals, cfg config.Config, p printer, inject, output, until string) error {
	stack, err := devstack.Start(ctx, cfg, g.stderr)
	if err != nil {
		return err
	}
	defer stack.Close()
	c, err := app.Dial(ctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := app.EnsureSearchAttributes(ctx, c, cfg.Temporal.Namespace); err != nil {
		return err
	}
	if inject == fakegw.ModePrimaryDown && len(cfg.Gateway.Fallbacks) == 0 {
		// The fake's primary is down; its fallback model answers.
		cfg.Gateway.Fallbacks = []config.Fallback{{Provider: cfg.Gateway.Provider, Model: fakegw.FallbackModel}}
	}
	if inject == "breaker" {
		stopMCP, err := serveFlakyMCP(&cfg)
		if err != nil {
			return err
		}
		defer stopMCP()
	}
	// The fault reaches the scripted model through the task, and the tools through this worker,
	// which alone polls the demo's own task queue: no other worker can take the session and skip
	// the fault.
	cfg.Temporal.TaskQueue = app.ProcessQueue(cfg.Temporal.TaskQueue)
	stop, err := app.StartWorker(ctx, c, cfg, stack.GatewayURL(cfg.Gateway.Provider), toolhooks.ForMode(inject)...)
	if err != nil {
		return err
	}
	defer stop()

	wid := newWorkflowID("demo")
	workdir, err := filepath.Abs(filepath.Join(cfg.Dev.StateDir, "demo", wid))
	if err != nil {
		return fmt.Errorf("resolving the demo workspace: %w", err)
	}
	if err := demo.CopyWorkspace(workdir); err != nil {
		return fmt.Errorf("copying the demo workspace: %w", err)
	}
	nameSession(p, wid)
	p.info("workspace: " + workdir)
	sum, err := startSession(ctx, c, cfg, sessionSpec{workflowID: wid, task: fakegw.WithMode(demoTask, inject), workdir: workdir, output: output, ownWorker: true, goal: goalOf(until)}, p)
	if err != nil {
		return err
	}
	if stack.Server != nil {
		p.info(fmt.Sprintf("this run's dev server kept the session in %s; `go run ./starter dev` serves it again at %s", stack.DBFile, uiLink(cfg, wid)))
	}
	// The summary is the last line: --output jsonl readers take it as the end.
	p.summary(sum)
	if code := exitCode(sum.Status); code != ExitOK {
		return &exitError{code: code}
	}
	return nil
}

// serveFlakyMCP serves, for the breaker fault, an MCP server whose flaky_lookup always fails, and
// configures it with read_file as the fallback the model is offered once its breaker opens.
func serveFlakyMCP(cfg *config.Config) (func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("serving the flaky MCP server: %w", err)
	}
	srv := &http.Server{Handler: flaky.Handler(flaky.NewServer(nil)), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	cfg.MCP = append(cfg.MCP, config.MCPServer{Name: "flaky", URL: "http://" + ln.Addr().String() + "/mcp"})
	if cfg.Tools.Fallbacks == nil {
		cfg.Tools.Fallbacks = map[string]string{}
	}
	cfg.Tools.Fallbacks[fakegw.FlakyTool] = "read_file"
	return func() { _ = srv.Close() }, nil
}
