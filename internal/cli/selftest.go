package cli

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/devkit/devstack"
	"github.com/keelrun/keel/internal/devkit/selftest"
)

func selftestCmd(g *globals) *cobra.Command {
	var parallel int
	var only string
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
	cmd.Flags().IntVar(&parallel, "parallel", 4, "rows run at the same time")
	cmd.Flags().StringVar(&only, "only", "", "run only the rows whose name contains this text (for example steer)")
	return cmd
}
