package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/keelrun/keel/internal/app"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/tools/snapshot"
	"github.com/keelrun/keel/internal/workspace"
)

// pruneCmd removes work directory snapshots by the retention (snapshots.keep_for, then
// snapshots.keep_mb), so the state directory does not keep every turn of every session forever.
func pruneCmd(g *globals) *cobra.Command {
	var dryRun bool
	var keepMB int64
	var keepFor time.Duration
	cmd := &cobra.Command{
		Use:     "prune [--dry-run] [--keep-mb N] [--keep-for DURATION]",
		Example: "  starter prune --dry-run\n  starter prune --keep-mb 500 --keep-for 72h",
		Short: "Remove the oldest work directory snapshots (for fork --turn) down to the retention: snapshots.keep_for, then snapshots.keep_mb; " +
			"the workspaces unused for workspaces.keep_for, here and recorded in the store; and git caches past workspaces.cache_mb",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.loadFor(cmd, config.Starter, nil)
			if err != nil {
				return err
			}
			o := snapshot.PruneOptions{KeepFor: cfg.Snapshots.KeepFor, KeepBytes: cfg.Snapshots.KeepBytes, DryRun: dryRun}
			if cmd.Flags().Changed("keep-mb") {
				if keepMB < 0 {
					return usageErr("--keep-mb must be 0 or more")
				}
				o.KeepBytes = keepMB << 20
			}
			if cmd.Flags().Changed("keep-for") {
				if keepFor < 0 {
					return usageErr("--keep-for must be 0 or more")
				}
				o.KeepFor = keepFor
			}
			rep, err := app.Snapshots(cfg).Prune(o)
			if err != nil {
				return err
			}
			printPrune(g.stdout, rep, o)
			if err := pruneWorkspaces(cmd.Context(), g.stdout, cfg.Workspaces, dryRun); err != nil {
				return err
			}
			return pruneRecorded(cmd.Context(), g.stdout, cfg, dryRun)
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "say what would be removed and what it takes, and remove nothing")
	cmd.Flags().Int64Var(&keepMB, "keep-mb", 0, "bring the snapshots to at most this many MiB (default: snapshots.keep_mb; 0: any size)")
	cmd.Flags().DurationVar(&keepFor, "keep-for", 0, "remove the snapshots of sessions whose newest is older (default: snapshots.keep_for; 0: any age)")
	return cmd
}

// printPrune writes what prune removed, or would remove, one session a line, then the totals.
func printPrune(w io.Writer, rep snapshot.PruneReport, o snapshot.PruneOptions) {
	verb, after := "removed", "now take"
	if o.DryRun {
		verb, after = "would remove", "would take"
	}
	if len(rep.Sessions) == 0 {
		fmt.Fprintf(w, "nothing to prune: the snapshots take %s (keep %s, %s)\n", mib(rep.Before), keepSize(o.KeepBytes), keepAge(o.KeepFor))
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SESSION\tSNAPSHOTS\tWHY")
		for _, p := range rep.Sessions {
			what := fmt.Sprintf("turns %s", turnList(p.Turns))
			if p.Whole {
				what = "all (" + what + ")"
			}
			why := "older than " + keepAge(o.KeepFor)
			if p.Why == "size" {
				why = "over " + keepSize(o.KeepBytes)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", snapshot.Printable(p.Session), what, why)
		}
		_ = tw.Flush()
	}
	fmt.Fprintf(w, "%s %d snapshot(s) of %d session(s) and %d stored content(s) of %s; the snapshots took %s and %s %s\n",
		verb, countTurns(rep), len(rep.Sessions), rep.Contents, mib(rep.ContentBytes), mib(rep.Before), after, mib(rep.After))
}

func countTurns(rep snapshot.PruneReport) int {
	n := 0
	for _, p := range rep.Sessions {
		n += len(p.Turns)
	}
	return n
}

func turnList(turns []int) string {
	s := make([]string, len(turns))
	for i, t := range turns {
		s[i] = fmt.Sprint(t)
	}
	return strings.Join(s, ",")
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func keepSize(n int64) string {
	if n == 0 {
		return "any size"
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

func keepAge(d time.Duration) string {
	if d == 0 {
		return "any age"
	}
	return d.String()
}

// pruneWorkspaces removes, on this machine's workspace root, the workspaces no tool has used for
// workspaces.keep_for and the git caches past workspaces.cache_mb, and says what went.
func pruneWorkspaces(ctx context.Context, w io.Writer, c config.Workspaces, dryRun bool) error {
	if c.Root == "" {
		return nil
	}
	rep, err := (&workspace.Manager{Root: c.Root}).Prune(ctx, workspace.PruneOptions{KeepFor: c.KeepFor, CacheBytes: c.CacheBytes, DryRun: dryRun})
	if err != nil {
		return fmt.Errorf("pruning the workspaces under %s: %w", c.Root, err)
	}
	verb, after := "removed", "now take"
	if dryRun {
		verb, after = "would remove", "would take"
	}
	fmt.Fprintf(w, "%s %d workspace(s) unused for %s (%s) and %d git cache(s) (%s); the caches %s %s (keep %s)\n",
		verb, rep.Workspaces, keepAge(c.KeepFor), mib(rep.WorkspaceBytes), rep.Caches, mib(rep.CacheBytes), after, mib(rep.CachesLeft), keepSize(c.CacheBytes))
	return nil
}

// pruneRecorded empties the workspaces recorded in the store whose newest record is older than
// workspaces.keep_for, removes the contents no record names any more, and says what went.
func pruneRecorded(ctx context.Context, w io.Writer, cfg config.Config, dryRun bool) error {
	if cfg.Workspaces.KeepFor == 0 {
		return nil
	}
	st, err := app.OpenStore(ctx, cfg)
	if err != nil {
		return err
	}
	rep, err := st.PruneWorkspaces(ctx, time.Now().Add(-cfg.Workspaces.KeepFor), dryRun)
	if err != nil {
		return err
	}
	verb := "emptied"
	if dryRun {
		verb = "would empty"
	}
	fmt.Fprintf(w, "%s %d recorded workspace(s) unused for %s in the store (%d record(s)), and %d stored file(s) no record names (%s)\n",
		verb, rep.Workspaces, keepAge(cfg.Workspaces.KeepFor), rep.Records, rep.Files, mib(rep.Bytes))
	return nil
}
