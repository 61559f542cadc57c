package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/session"
	"github.com/keelrun/keel/internal/textfmt"
)

func approveCmd(g *globals) *cobra.Command {
	var digest, reason string
	var deny, show, allowTool, allowCommand bool
	cmd := &cobra.Command{
		Use:     "approve WORKFLOW_ID [CALL_ID] [--digest D] [--allow-tool | --allow-command | --deny [--reason TEXT] | --show]",
		Example: "  starter approve " + exampleID + "\n  starter approve " + exampleID + " --allow-command\n  starter approve " + exampleID + " --deny --reason \"edit calc.go, do not rewrite it\"\n  starter approve " + exampleID + " --show\n  (without CALL_ID and --digest: the call waiting now, printed first)",
		Short:   "Approve (or deny) the tool call a session is waiting on",
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if reason != "" && !deny {
				return usageErr("--reason goes with --deny: it tells the model why the call was denied")
			}
			if len(reason) > contract.MaxDenyReason {
				return usageErr("--reason is %d bytes; at most %d reach the model", len(reason), contract.MaxDenyReason)
			}
			return withClient(g, cmd, func(ctx context.Context, c client.Client) error {
				if err := resolveArg(ctx, c, &args[0]); err != nil {
					return err
				}
				d := contract.ApprovalDecision{Digest: digest, Approve: !deny, By: currentUser(), Reason: reason}
				switch {
				case allowTool:
					d.AllowFor = contract.AllowTool
				case allowCommand:
					d.AllowFor = contract.AllowCommand
				}
				if len(args) == 2 {
					d.CallID = args[1]
				}
				if show {
					return showCall(ctx, g, session.Client{Temporal: c}, args[0], d.CallID)
				}
				if d.CallID == "" || d.Digest == "" {
					// Name the call the person is looking at: the one waiting now.
					st, err := session.Client{Temporal: c}.Status(ctx, args[0])
					if err != nil {
						return err
					}
					if st.Approval == nil {
						return &exitError{code: ExitFailure, err: fmt.Errorf("session %s has no tool call waiting for approval", args[0])}
					}
					fmt.Fprintf(g.stdout, "%s %s\n", st.Approval.Tool, sanitize(st.Approval.Arguments))
					d.CallID, d.Digest = orDefault(d.CallID, st.Approval.CallID), orDefault(d.Digest, st.Approval.Digest)
				}
				res, err := approveCall(ctx, session.Client{Temporal: c}, args[0], d)
				return report(g, res, err)
			})
		},
	}
	cmd.Flags().StringVar(&digest, "digest", "", "SHA-256 of the call's argument text, as the session shows it (default: the waiting call's)")
	cmd.Flags().BoolVar(&deny, "deny", false, "deny the call instead")
	cmd.Flags().StringVar(&reason, "reason", "", "with --deny: why not, or what to do instead; the model reads it")
	cmd.Flags().BoolVar(&show, "show", false, "print the whole call waiting for approval, and decide nothing")
	cmd.Flags().BoolVar(&allowTool, "allow-tool", false, "approve, and let every later call of this tool run without asking for the rest of the session")
	cmd.Flags().BoolVar(&allowCommand, "allow-command", false, "approve, and let later run_command calls of exactly this command run without asking for the rest of the session (another tool: as --allow-tool)")
	cmd.MarkFlagsMutuallyExclusive("deny", "show", "allow-tool", "allow-command")
	return cmd
}

// showCall prints the whole call a session waits to have approved (notices and prompts show
// long calls cut), made harmless to print, with its digest; it decides nothing.
func showCall(ctx context.Context, g *globals, c session.Client, workflowID, callID string) error {
	st, err := c.Status(ctx, workflowID)
	if err != nil {
		return err
	}
	a := st.Approval
	switch {
	case a == nil:
		return &exitError{code: ExitFailure, err: fmt.Errorf("session %s has no tool call waiting for approval", workflowID)}
	case callID != "" && a.CallID != callID:
		return &exitError{code: ExitFailure, err: fmt.Errorf("%s of session %s is not waiting for approval (%s is)", textfmt.Call(callID), workflowID, textfmt.Call(a.CallID))}
	}
	fmt.Fprintf(g.stdout, "tool: %s\ncall: %s\ndigest: %s\narguments (%d bytes):\n%s\n", a.Tool, sanitize(a.CallID), a.Digest, len(a.Arguments), sanitize(a.Arguments))
	return nil
}

// approveCall sends the approve_call update; a refusal by the session is a result, not an error.
// Unlike the Slack bot, it sends a new update each time (session.Client.ApproveAs with no ID): a person who
// runs the command again after the call was decided is told so, rather than being handed the
// first result as if it were new.
func approveCall(ctx context.Context, c session.Client, workflowID string, d contract.ApprovalDecision) (contract.AnswerResult, error) {
	res, err := c.ApproveAs(ctx, workflowID, "", d)
	if r, ok := errors.AsType[*session.RefusedError](err); ok {
		return contract.AnswerResult{Message: "refused: " + r.Message}, nil
	}
	return res, err
}

// sendApproval sends the decision the person typed at the terminal (y or n).
func (f *follower) sendApproval(ctx context.Context, d contract.ApprovalDecision) {
	uctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := approveCall(uctx, f.c, f.workflowID, d)
	if err != nil {
		f.p.info("approval failed: " + err.Error())
		return
	}
	f.p.info(res.Message)
}

func orDefault(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
