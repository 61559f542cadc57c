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
)

func approveCmd(g *globals) *cobra.Command {
	var digest string
	var deny bool
	cmd := &cobra.Command{
		Use:     "approve WORKFLOW_ID [CALL_ID] [--digest D] [--deny]",
		Example: "  starter approve " + exampleID + "\n  starter approve " + exampleID + " --deny\n  (without CALL_ID and --digest: the call waiting now, printed first)",
		Short:   "Approve (or deny) the tool call a session is waiting on",
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClient(g, cmd, func(ctx context.Context, c client.Client) error {
				if err := resolveArg(ctx, c, &args[0]); err != nil {
					return err
				}
				d := contract.ApprovalDecision{Digest: digest, Approve: !deny, By: currentUser()}
				if len(args) == 2 {
					d.CallID = args[1]
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
					fmt.Fprintf(g.stdout, "%s %s\n", st.Approval.Tool, st.Approval.Arguments)
					d.CallID, d.Digest = orDefault(d.CallID, st.Approval.CallID), orDefault(d.Digest, st.Approval.Digest)
				}
				res, err := approveCall(ctx, session.Client{Temporal: c}, args[0], d)
				return report(g, res, err)
			})
		},
	}
	cmd.Flags().StringVar(&digest, "digest", "", "SHA-256 of the call's argument text, as the session shows it (default: the waiting call's)")
	cmd.Flags().BoolVar(&deny, "deny", false, "deny the call instead")
	return cmd
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
