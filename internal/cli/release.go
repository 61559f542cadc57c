package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/keelrun/keel/internal/app"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/textfmt"
)

// releaseCmd moves a Worker Deployment's traffic between builds, the steps of docs/operations.md's
// release procedure: deploy the new build's workers, ramp or make it current, drain the old one,
// and roll back by making the old build current again.
func releaseCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "release",
		Short: "Release a new worker build with Worker Versioning: status, ramp, current, drain (docs/operations.md)",
		Example: "  starter release status\n  starter release ramp b2 10\n  starter release current b2\n" +
			"  starter release drain b1 --wait 30m\n  starter release current b1   # roll back",
	}
	var wait time.Duration
	drain := &cobra.Command{
		Use:   "drain BUILD_ID",
		Short: "Say how many turns still run pinned to a build; with --wait, wait until none does, so its workers may stop",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withDeployment(g, cmd, func(ctx context.Context, cfg config.Config, c client.Client, h client.WorkerDeploymentHandle) error {
				return drainBuild(ctx, c, cfg, args[0], wait, g.stdout)
			})
		},
	}
	drain.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for the build to drain (0: say once and return)")
	cmd.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "Show the deployment's current and ramping builds and, for each build, its drainage and the turns pinned to it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDeployment(g, cmd, func(ctx context.Context, cfg config.Config, c client.Client, h client.WorkerDeploymentHandle) error {
				return releaseStatus(ctx, c, cfg, h, g.stdout)
			})
		},
	}, &cobra.Command{
		Use:   "current BUILD_ID",
		Short: "Make a build current: new sessions and turns start on it and running sessions move to it; the way to roll back too",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withDeployment(g, cmd, func(ctx context.Context, cfg config.Config, _ client.Client, h client.WorkerDeploymentHandle) error {
				if _, err := h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: args[0]}); err != nil {
					return fmt.Errorf("making build %s of %s current: %w", args[0], cfg.Temporal.Deployment, err)
				}
				fmt.Fprintf(g.stdout, "build %s of %s is current\n", args[0], cfg.Temporal.Deployment)
				return nil
			})
		},
	}, &cobra.Command{
		Use:   "ramp BUILD_ID PERCENT",
		Short: "Send PERCENT of new sessions and of running sessions' next tasks to a build, the rest to the current one (0 pauses)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			pct, err := strconv.ParseFloat(args[1], 32)
			if err != nil || pct < 0 || pct > 100 {
				return usageErr("PERCENT %q is not a number from 0 to 100", args[1])
			}
			return withDeployment(g, cmd, func(ctx context.Context, cfg config.Config, _ client.Client, h client.WorkerDeploymentHandle) error {
				if _, err := h.SetRampingVersion(ctx, client.WorkerDeploymentSetRampingVersionOptions{BuildID: args[0], Percentage: float32(pct)}); err != nil {
					return fmt.Errorf("ramping build %s of %s to %s%%: %w", args[0], cfg.Temporal.Deployment, args[1], err)
				}
				fmt.Fprintf(g.stdout, "build %s of %s ramps at %s%%\n", args[0], cfg.Temporal.Deployment, args[1])
				return nil
			})
		},
	}, drain)
	return cmd
}

// withDeployment runs f with a handle on the configured deployment, or says which key to set.
func withDeployment(g *globals, cmd *cobra.Command, f func(context.Context, config.Config, client.Client, client.WorkerDeploymentHandle) error) error {
	return withConfig(g, cmd, func(ctx context.Context, cfg config.Config, c client.Client) error {
		if cfg.Temporal.Deployment == "" {
			return usageErr("no deployment: set %s (%s) to the workers' deployment name", config.TemporalDeployment, config.EnvName(config.TemporalDeployment))
		}
		return f(ctx, cfg, c, c.WorkerDeploymentClient().GetHandle(cfg.Temporal.Deployment))
	})
}

// releaseStatus prints the routing and one row per build the server tracks.
func releaseStatus(ctx context.Context, c client.Client, cfg config.Config, h client.WorkerDeploymentHandle, out io.Writer) error {
	d, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
	if err != nil {
		return fmt.Errorf("describing deployment %s: %w", cfg.Temporal.Deployment, err)
	}
	rc := d.Info.RoutingConfig
	fmt.Fprintf(out, "deployment %s: current %s", cfg.Temporal.Deployment, buildName(rc.CurrentVersion))
	if rc.RampingVersion != nil || rc.RampingVersionPercentage > 0 {
		fmt.Fprintf(out, ", ramping %s at %g%%", buildName(rc.RampingVersion), rc.RampingVersionPercentage)
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BUILD\tROUTING\tDRAINAGE\tPINNED TURNS RUNNING")
	for _, v := range d.Info.VersionSummaries {
		n, err := app.PinnedRunning(ctx, c, cfg.Temporal.Namespace, v.Version)
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", v.Version.BuildID, routing(rc, v.Version), drainage(v.DrainageStatus), n)
	}
	return tw.Flush()
}

// drainBuild says how many turns run pinned to build and, with wait, polls until none does.
func drainBuild(ctx context.Context, c client.Client, cfg config.Config, build string, wait time.Duration, out io.Writer) error {
	v := worker.WorkerDeploymentVersion{DeploymentName: cfg.Temporal.Deployment, BuildID: build}
	deadline := time.Now().Add(wait)
	last := int64(-1)
	for {
		n, err := app.PinnedRunning(ctx, c, cfg.Temporal.Namespace, v)
		if err != nil {
			return err
		}
		if n == 0 {
			fmt.Fprintf(out, "build %s is drained: no turn runs on it; its workers may stop\n", build)
			return nil
		}
		if !time.Now().Before(deadline) {
			return &exitError{code: 1, err: fmt.Errorf("build %s is not drained: %s still run on it; keep its workers running", build, textfmt.Count(n, "turn"))}
		}
		if n != last {
			fmt.Fprintf(out, "build %s: %s still run on it\n", build, textfmt.Count(n, "turn"))
			last = n
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func buildName(v *worker.WorkerDeploymentVersion) string {
	if v == nil {
		return "(unversioned workers)"
	}
	return v.BuildID
}

func routing(rc client.WorkerDeploymentRoutingConfig, v worker.WorkerDeploymentVersion) string {
	switch {
	case rc.CurrentVersion != nil && *rc.CurrentVersion == v:
		return "current"
	case rc.RampingVersion != nil && *rc.RampingVersion == v:
		return fmt.Sprintf("ramping %g%%", rc.RampingVersionPercentage)
	}
	return "-"
}

func drainage(s client.WorkerDeploymentVersionDrainageStatus) string {
	switch s {
	case client.WorkerDeploymentVersionDrainageStatusDraining:
		return "draining"
	case client.WorkerDeploymentVersionDrainageStatusDrained:
		return "drained"
	}
	return "-"
}
