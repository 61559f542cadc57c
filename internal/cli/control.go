package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/escalation"
	"github.com/keelrun/keel/internal/app"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/session"
	"github.com/keelrun/keel/internal/textfmt"
)

// withClient loads the configuration, connects, and runs f.
func withClient(g *globals, cmd *cobra.Command, f func(ctx context.Context, c client.Client) error) error {
	return withConfig(g, cmd, func(ctx context.Context, _ config.Config, c client.Client) error { return f(ctx, c) })
}

// withConfig is withClient for commands that also need the configuration.
func withConfig(g *globals, cmd *cobra.Command, f func(ctx context.Context, cfg config.Config, c client.Client) error) error {
	// These commands talk to Temporal only; no provider key is needed.
	cfg, err := g.loadFor(cmd, config.Starter, nil)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	c, err := app.Dial(ctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	return f(ctx, cfg, c)
}

func cancelCmd(g *globals) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:     "cancel WORKFLOW_ID",
		Example: "  starter cancel " + exampleID + " --reason \"wrong task\"",
		Short:   "Cancel a running session: its turn, model stream and commands stop; one no worker takes is terminated",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withClient(g, cmd, func(ctx context.Context, c client.Client) error {
				if err := resolveArg(ctx, c, &args[0]); err != nil {
					return err
				}
				res, err := session.Client{Temporal: c}.CancelOrEnd(ctx, args[0], contract.CancelRequest{Reason: reason, By: currentUser()}, CancelWait)
				if err != nil {
					return err
				}
				fmt.Fprintln(g.stdout, res.Message)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "from the command line", "why, for the transcript")
	return cmd
}

func answerCmd(g *globals) *cobra.Command {
	var text string
	cmd := &cobra.Command{
		Use:     "answer WORKFLOW_ID [ESCALATION_ID] retry|edit|abort [--text ...]",
		Example: "  starter answer " + exampleID + " retry\n  starter answer " + exampleID + " esc-9f86d081-1 edit --text \"read calc.go before you change it\"\n  (without ESCALATION_ID: the one the session waits on; starter escalations lists the pending ones with their IDs)",
		Short:   "Answer a pending escalation",
		Args:    cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 {
				// No escalation named: the one the session waits on, looked up below.
				args = []string{args[0], "", args[1]}
			}
			action := args[2]
			if !slices.Contains([]string{contract.ActionRetry, contract.ActionEdit, contract.ActionAbort}, action) {
				return usageErr("action %q is not one of retry, edit, abort", action)
			}
			if action == contract.ActionEdit && text == "" {
				return usageErr("edit needs --text (corrected arguments or an instruction for the model)")
			}
			return withClient(g, cmd, func(ctx context.Context, c client.Client) error {
				if err := resolveArg(ctx, c, &args[0]); err != nil {
					return err
				}
				if args[1] == "" {
					st, err := session.Client{Temporal: c}.Status(ctx, args[0])
					if err != nil {
						return err
					}
					if !session.AwaitsAnswer(st.Escalation) {
						return &exitError{code: ExitFailure, err: fmt.Errorf("session %s has no escalation waiting for an answer", args[0])}
					}
					args[1] = st.Escalation.ID
				}
				res, err := answerSession(ctx, session.Client{Temporal: c}, args[0], contract.Answer{
					EscalationID: args[1], Action: action, Text: text, By: currentUser(), Via: "cli",
				})
				return report(g, res, err)
			})
		},
	}
	cmd.Flags().StringVar(&text, "text", "", "with edit: corrected arguments or an instruction for the model")
	return cmd
}

// report prints whether an answer or approval was accepted; a refusal exits 1.
func report(g *globals, res contract.AnswerResult, err error) error {
	if err != nil {
		return err
	}
	fmt.Fprintln(g.stdout, res.Message)
	if !res.Accepted {
		return &exitError{code: ExitFailure}
	}
	return nil
}

// answerSession sends an answer as the session's update and reports whether it was accepted: a
// refusal, or a session that has ended, is a result that is not accepted.
func answerSession(ctx context.Context, c session.Client, workflowID string, a contract.Answer) (contract.AnswerResult, error) {
	res, err := c.Answer(ctx, workflowID, a)
	return refusedAnswer(res, err, func() string {
		return fmt.Sprintf("session %s has already ended; escalation %s can no longer be answered", workflowID, a.EscalationID)
	})
}

// refusedAnswer turns a session's refusal, or its having ended (in the words ended gives), into a
// result that is not accepted, saying "refused: " and why.
func refusedAnswer(res contract.AnswerResult, err error, ended func() string) (contract.AnswerResult, error) {
	if r, ok := errors.AsType[*session.RefusedError](err); ok {
		return contract.AnswerResult{Message: "refused: " + r.Message}, nil
	}
	if errors.Is(err, session.ErrEnded) {
		return contract.AnswerResult{Message: "refused: " + ended()}, nil
	}
	return res, err
}

func escalationsCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "escalations",
		Short: "List what running sessions wait on a person for: escalations to answer and tool calls to approve",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := newPrinter(output, g.stdout)
			if err != nil {
				return err
			}
			return withClient(g, cmd, func(ctx context.Context, c client.Client) error {
				pending, err := session.Client{Temporal: c}.Pending(ctx)
				if err != nil {
					return err
				}
				for _, s := range pending {
					if e := s.Status.Escalation; session.AwaitsAnswer(e) {
						printEscalation(p, g, *e)
					}
					if a := s.Status.Approval; a != nil {
						printApproval(p, g, s.WorkflowID, *a)
					}
				}
				if len(pending) == 0 && output != "jsonl" {
					fmt.Fprintln(g.stdout, "no pending escalations or approvals")
				}
				return nil
			})
		},
	}
	outputFlag(cmd, &output)
	return cmd
}

// printEscalation prints one pending escalation: its text for people, or an escalation event.
func printEscalation(p printer, g *globals, e contract.Escalation) {
	if _, ok := p.(*jsonPrinter); ok {
		p.event(contract.Event{Event: contract.EventEscalation, WorkflowID: e.WorkflowID, Escalation: &e, Text: e.Summary})
		return
	}
	fmt.Fprintln(g.stdout, escalation.Text(e))
}

// printApproval prints one tool call waiting for approval with the command that decides it: as
// text for people, or an approval event.
func printApproval(p printer, g *globals, workflowID string, a contract.Approval) {
	answer := escalation.ApproveCommand(contract.Escalation{WorkflowID: workflowID, Approval: &a})
	if _, ok := p.(*jsonPrinter); ok {
		p.event(contract.Event{Event: contract.EventApproval, WorkflowID: workflowID, Tool: a.Tool, CallID: a.CallID, Arguments: a.Arguments, Text: answer})
		return
	}
	fmt.Fprintf(g.stdout, "Session %s waits for approval of a %s call\nCall: %s\nArguments: %s\nAnswer with: %s\n\n",
		workflowID, a.Tool, sanitize(a.CallID), textfmt.Preview(a.Arguments, 400, fmt.Sprintf("`starter approve %s %s --show` prints the whole call", workflowID, a.CallID)), answer)
}

func sayCmd(g *globals) *cobra.Command {
	var interrupt bool
	cmd := &cobra.Command{
		Use:     "say WORKFLOW_ID TEXT",
		Example: "  starter say " + exampleID + " \"also update the README\"",
		Short:   "Add a message to a running session; it reaches the next model call (after the turn in flight, or at once with --interrupt)",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return sendSay(g, cmd, args[0], args[1], interrupt)
		},
	}
	cmd.Flags().BoolVar(&interrupt, "interrupt", false, "cancel the turn in flight first (its partial reply and finished tool results are kept)")
	return cmd
}

func interruptCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "interrupt WORKFLOW_ID TEXT",
		Example: "  starter interrupt " + exampleID + " \"stop: the tests are in ./calc, not ./\"",
		Short:   "Cancel the turn in flight and give the model a message; the session goes on",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return sendSay(g, cmd, args[0], args[1], true)
		},
	}
}

// sendSay sends the say update and reports whether the session took the message; a refusal
// (ended session, empty or oversized text) exits 1 with the reason.
func sendSay(g *globals, cmd *cobra.Command, workflowID, text string, interrupt bool) error {
	if strings.TrimSpace(text) == "" {
		return usageErr("the message is empty")
	}
	if len(text) > contract.MaxSayBytes {
		return usageErr("the message is %d bytes; the most a message may have is %d", len(text), contract.MaxSayBytes)
	}
	return withClient(g, cmd, func(ctx context.Context, c client.Client) error {
		if err := resolveArg(ctx, c, &workflowID); err != nil {
			return err
		}
		res, err := session.Client{Temporal: c}.Say(ctx, workflowID, contract.Say{Text: text, By: currentUser(), Via: "cli", Interrupt: interrupt})
		refused := ""
		if r, ok := errors.AsType[*session.RefusedError](err); ok {
			refused = r.Message
		} else if errors.Is(err, session.ErrEnded) {
			refused = fmt.Sprintf("session %s has already ended", workflowID)
		} else if err != nil {
			return err
		}
		if refused != "" {
			fmt.Fprintln(g.stdout, "refused: "+refused)
			return &exitError{code: ExitFailure}
		}
		fmt.Fprintln(g.stdout, res.Message)
		return nil
	})
}
