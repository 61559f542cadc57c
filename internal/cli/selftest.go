package cli

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/devkit/devstack"
	"github.com/keelrun/keel/internal/devkit/selftest"
)

// freeLoopbackPort is a port on 127.0.0.1 nothing listens on now.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port for the self-test's dev server: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func selftestCmd(g *globals) *cobra.Command {
	var parallel int
	var only string
	var sharedServer bool
	cmd := &cobra.Command{
		Use:   "selftest",
		Short: "Run every fault-matrix row (gateway, tools, limits, cancellation), each in a fresh process",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.load(cmd, map[string]any{config.GatewayFake: true})
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if !sharedServer {
				// Its ~30 sessions would flood the list of the user's own server: by default
				// the rows run on a headless dev server of their own, in memory, gone at the end.
				port, err := freeLoopbackPort()
				if err != nil {
					return err
				}
				tmp, err := os.MkdirTemp("", "keel-selftest-*")
				if err != nil {
					return fmt.Errorf("creating the self-test's own folder: %w", err)
				}
				defer os.RemoveAll(tmp)
				cfg.Temporal.Address = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
				cfg.Dev.StateDir, cfg.Dev.UIPort, cfg.Dev.MetricsPort = tmp, 0, 0
				fmt.Fprintf(g.stderr, "keel: the self-test runs on a dev server of its own (%s); --shared-server runs it on the configured one\n", cfg.Temporal.Address)
			}
			stack, err := devstack.Start(ctx, cfg, g.stderr)
			if err != nil {
				return err
			}
			defer stack.Close()
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding the starter's own binary: %w", err)
			}
			env := append(os.Environ(), "KEEL_TEMPORAL_ADDRESS="+cfg.Temporal.Address)
			rows := selftest.Rows()
			if only != "" {
				rows = slices.DeleteFunc(rows, func(r selftest.Row) bool { return !strings.Contains(r.Name, only) })
				if len(rows) == 0 {
					return usageErr("no self-test row has %q in its name", only)
				}
			}
			if selftest.Run(ctx, exe, env, rows, parallel, g.stdout) > 0 {
				return &exitError{code: ExitFailure}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&sharedServer, "shared-server", false,
		"run the rows on the configured Temporal server (temporal.address; one is started there if none answers) instead of a dev server of their own")
	cmd.Flags().IntVar(&parallel, "parallel", 4, "rows run at the same time")
	cmd.Flags().StringVar(&only, "only", "", "run only the rows whose name contains this text (for example steer)")
	return cmd
}
