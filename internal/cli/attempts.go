package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/events"
)

func attemptsCmd(g *globals) *cobra.Command {
	var job contract.JobKey
	var output string
	cmd := &cobra.Command{
		Use:     "attempts [WORKFLOW_ID | --repo R --commit C --path P --prompt-version V --model M]",
		Example: "  starter attempts " + exampleID,
		Short:   "Show a job's attempt history (each model and tool call, attempts, outcome, class), read from Temporal's history",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var wid string
			switch {
			case len(args) == 1:
				wid = args[0]
			case job.Repository != "":
				wid = job.WorkflowID()
			default:
				return usageErr("name a workflow ID or a job key (--repo, --commit, --path, --prompt-version, --model)")
			}
			if output != "text" && output != "jsonl" {
				return usageErr("--output %q is not one of text, jsonl", output)
			}
			return withClient(g, cmd, func(ctx context.Context, c client.Client) error {
				if len(args) == 1 {
					if err := resolveArg(ctx, c, &wid); err != nil {
						return err
					}
				}
				return printAttempts(ctx, c, wid, output, g.stdout)
			})
		},
	}
	cmd.Flags().StringVar(&job.Repository, "repo", "", "job key: repository")
	cmd.Flags().StringVar(&job.Commit, "commit", "", "job key: commit")
	cmd.Flags().StringVar(&job.Path, "path", "", "job key: path")
	cmd.Flags().StringVar(&job.PromptVersion, "prompt-version", "v1", "job key: prompt version")
	cmd.Flags().StringVar(&job.Model, "model", "gpt-4o-mini", "job key: model alias")
	outputFlag(cmd, &output)
	return cmd
}

// attemptRow is one activity of a session, as its history records it. With --output jsonl it is
// printed as an "attempt" record.
type attemptRow struct {
	Event      string    `json:"event"`
	At         time.Time `json:"time"`
	WorkflowID string    `json:"workflow_id"`
	Turn       string    `json:"turn"`
	Activity   string    `json:"activity"`
	Attempts   int32     `json:"attempts"`
	Outcome    string    `json:"outcome"`
	// Class is Keel's failure class (throttle, transport, ...) of the last failed attempt, or the
	// error type when the failure carries none.
	Class string `json:"class,omitempty"`
	// Model is the model that answered a CallModel, marked when it was a fallback.
	Model string `json:"model,omitempty"`
}

// printAttempts walks the session's runs and its turns' histories, the ledger of every attempt.
func printAttempts(ctx context.Context, c client.Client, wid, output string, out io.Writer) error {
	turns, err := childIDs(ctx, c, wid)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if output != "jsonl" {
		fmt.Fprintln(tw, "TIME\tTURN\tACTIVITY\tATTEMPTS\tOUTCOME\tCLASS\tMODEL")
	}
	rows, err := sessionRows(ctx, c, wid, turns)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if output == "jsonl" {
			r.Event, r.WorkflowID, r.At = "attempt", wid, r.At.UTC()
			if err := enc.Encode(r); err != nil {
				return fmt.Errorf("writing the attempts: %w", err)
			}
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", r.At.Format(time.TimeOnly), r.Turn, r.Activity, r.Attempts, r.Outcome, r.Class, r.Model)
	}
	return tw.Flush()
}

// sessionRows lists the activities of a session's turns, turn by turn, with the session's own model
// calls (compactions, between turns) in their place by time.
func sessionRows(ctx context.Context, c client.Client, wid string, turns []string) ([]attemptRow, error) {
	own, err := activityRows(ctx, c, wid)
	if err != nil {
		return nil, err
	}
	var rows []attemptRow
	for _, r := range own {
		if strings.HasPrefix(r.Activity, contract.CompactActivity) {
			r.Turn = "compaction"
			rows = append(rows, r)
		}
	}
	for _, turn := range turns {
		more, err := activityRows(ctx, c, turn)
		if err != nil {
			return nil, err
		}
		rows = append(rows, more...)
	}
	// Stable: a turn's own activities keep their order.
	slices.SortStableFunc(rows, func(a, b attemptRow) int { return a.At.Compare(b.At) })
	return rows, nil
}

// failureClass is Keel's class of a failure: the class a model call's failure carries in its
// details, or the error type for anything else.
func failureClass(f *failurepb.Failure) string {
	info := f.GetApplicationFailureInfo()
	if info == nil {
		return ""
	}
	if info.GetType() == contract.ModelErrorType {
		var mf contract.Failure
		if converter.GetDefaultDataConverter().FromPayloads(info.GetDetails(), &mf) == nil && mf.Class != "" {
			return mf.Class
		}
	}
	return info.GetType()
}

// childIDs lists the turn workflows a session started, over all its runs.
func childIDs(ctx context.Context, c client.Client, wid string) ([]string, error) {
	var ids []string
	it := c.GetWorkflowHistory(ctx, wid, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("reading the history of %s: %w", wid, err)
		}
		if a := ev.GetStartChildWorkflowExecutionInitiatedEventAttributes(); a != nil {
			ids = append(ids, a.GetWorkflowId())
		}
	}
	return ids, nil
}

// activityRows reads one turn's activities: scheduled, the last attempt started, how it ended.
func activityRows(ctx context.Context, c client.Client, turnID string) ([]attemptRow, error) {
	byID := map[int64]*attemptRow{}
	var order []*attemptRow
	turn := turnID[strings.LastIndex(turnID, "/")+1:]
	it := c.GetWorkflowHistory(ctx, turnID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("reading the history of %s: %w", turnID, err)
		}
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			r := &attemptRow{At: ev.GetEventTime().AsTime(), Turn: turn, Activity: activityLabel(ev, a.GetActivityType().GetName()), Outcome: "pending"}
			if a.GetActivityType().GetName() == contract.CallModelActivity {
				r.Model = askedFor(a.GetInput())
			}
			byID[ev.GetEventId()] = r
			order = append(order, r)
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			if r := byID[a.GetScheduledEventId()]; r != nil {
				r.Attempts = a.GetAttempt()
				if f := a.GetLastFailure(); f != nil {
					r.Class = failureClass(f)
				}
			}
		}
		if la, ok := events.LocalActivityOf(ev); ok {
			order = append(order, localRow(ev, la, turn))
		}
		settle(ev, byID)
	}
	rows := make([]attemptRow, len(order))
	for i, r := range order {
		rows[i] = *r
	}
	return rows, nil
}

// localRow is the row of an activity the turn ran as a local activity (a read): its one marker
// says what ran and how it ended.
func localRow(ev *historypb.HistoryEvent, la events.LocalActivity, turn string) *attemptRow {
	name := la.Type
	if name == "" {
		name = "local activity"
	}
	r := &attemptRow{At: ev.GetEventTime().AsTime(), Turn: turn, Activity: activityLabel(ev, name), Attempts: max(la.Attempt, 1), Outcome: "completed"}
	if f := la.Failure; f != nil {
		r.Outcome, r.Class = "failed: "+clip(f.GetMessage(), 80), failureClass(f)
	}
	return r
}

// settle records how an activity ended.
func settle(ev *historypb.HistoryEvent, byID map[int64]*attemptRow) {
	var sched int64
	outcome, class, model := "", "", ""
	switch {
	case ev.GetActivityTaskCompletedEventAttributes() != nil:
		a := ev.GetActivityTaskCompletedEventAttributes()
		sched, outcome, model = a.GetScheduledEventId(), "completed", servedBy(a.GetResult())
	case ev.GetActivityTaskFailedEventAttributes() != nil:
		a := ev.GetActivityTaskFailedEventAttributes()
		sched, outcome = a.GetScheduledEventId(), "failed: "+clip(a.GetFailure().GetMessage(), 80)
		class = failureClass(a.GetFailure())
	case ev.GetActivityTaskTimedOutEventAttributes() != nil:
		sched, outcome = ev.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId(), "timed out (outcome unknown)"
	case ev.GetActivityTaskCanceledEventAttributes() != nil:
		sched, outcome = ev.GetActivityTaskCanceledEventAttributes().GetScheduledEventId(), "cancelled"
	default:
		return
	}
	if r := byID[sched]; r != nil {
		r.Outcome = outcome
		if a := ev.GetActivityTaskCompletedEventAttributes(); a != nil && strings.HasPrefix(r.Activity, contract.ToolLedgerActivity) {
			r.Outcome = reconciled(a.GetResult())
		}
		if (strings.HasPrefix(r.Activity, contract.CallModelActivity) || strings.HasPrefix(r.Activity, contract.CompactActivity)) && (model != "" || r.Model == "") {
			r.Model = model
		}
		if class != "" {
			r.Class = class
		}
	}
}

// askedFor names the endpoint a CallModel asked for when its session named one, so a call that
// failed still shows where it went; empty for a session that left the endpoint to the workers.
func askedFor(input *commonpb.Payloads) string {
	var req contract.ModelRequest
	if converter.GetDefaultDataConverter().FromPayloads(input, &req) != nil || req.Endpoint == nil {
		return ""
	}
	return endpointLabel(*req.Endpoint, req.Model)
}

// servedBy reads which model answered from a CallModel or CompactTranscript result, as the
// history recorded it (both results name it the same way).
func servedBy(result *commonpb.Payloads) string {
	var resp contract.ModelResponse
	if converter.GetDefaultDataConverter().FromPayloads(result, &resp) != nil || resp.Model == "" {
		return ""
	}
	if resp.Fallback {
		return resp.Model + " (fallback)"
	}
	return resp.Model
}

func activityLabel(ev *historypb.HistoryEvent, name string) string {
	if s := ev.GetUserMetadata().GetSummary(); s != nil && len(s.GetData()) > 0 {
		return name + " (" + strings.Trim(string(s.GetData()), `"`) + ")"
	}
	return name
}
