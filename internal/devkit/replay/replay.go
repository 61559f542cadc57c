// Package replay records the histories of real sessions as JSON fixtures and replays fixtures
// against the current workflow code. A history that no longer replays means a change to the
// workflows would break sessions already running: the replay tests turn that into a failing test
// instead of a stuck production session.
package replay

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/workflows"
)

// FetchHistory reads the whole history of one workflow run (runID "" is the latest run).
func FetchHistory(ctx context.Context, c client.Client, workflowID, runID string) (*historypb.History, error) {
	it := c.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	hist := &historypb.History{}
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("reading the history of %s: %w", workflowID, err)
		}
		hist.Events = append(hist.Events, ev)
	}
	if len(hist.Events) == 0 {
		return nil, fmt.Errorf("reading the history of %s: it has no events", workflowID)
	}
	return hist, nil
}

// WriteHistory writes one workflow run's history to path as JSON, the format that
// `temporal workflow show --output json` prints and worker.WorkflowReplayer reads.
func WriteHistory(ctx context.Context, c client.Client, workflowID, runID, path string) (*historypb.History, error) {
	hist, err := FetchHistory(ctx, c, workflowID, runID)
	if err != nil {
		return nil, err
	}
	data, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(hist)
	if err != nil {
		return nil, fmt.Errorf("encoding the history of %s: %w", workflowID, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("creating the fixture folder: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("writing the history of %s: %w", workflowID, err)
	}
	return hist, nil
}

// Turn is one AgentTurn child that a session started. Name is what follows "turn-" in its ID:
// the turn number, with "-approval-K" for the K-th resume of a turn after an approval.
type Turn struct {
	N          int
	Name       string
	WorkflowID string
	RunID      string
}

// Turns lists the AgentTurn children a session's history started, in turn order. Their workflow
// IDs follow contract.TurnWorkflowID, which is how the turn number is read back.
func Turns(sessionID string, hist *historypb.History) ([]Turn, error) {
	var turns []Turn
	prefix := strings.TrimSuffix(contract.TurnWorkflowID(sessionID, 0), "0")
	for _, ev := range hist.GetEvents() {
		attrs := ev.GetChildWorkflowExecutionStartedEventAttributes()
		if attrs == nil {
			continue
		}
		exec := attrs.GetWorkflowExecution()
		name := strings.TrimPrefix(exec.GetWorkflowId(), prefix)
		num, _, _ := strings.Cut(name, "-")
		n, err := strconv.Atoi(num)
		if err != nil || !strings.HasPrefix(exec.GetWorkflowId(), contract.TurnWorkflowID(sessionID, n)) {
			return nil, fmt.Errorf("child %q of session %s is not named as a turn", exec.GetWorkflowId(), sessionID)
		}
		turns = append(turns, Turn{N: n, Name: name, WorkflowID: exec.GetWorkflowId(), RunID: exec.GetRunId()})
	}
	sort.SliceStable(turns, func(i, j int) bool { return turns[i].N < turns[j].N })
	return turns, nil
}

// RecordSession writes the history of a session run to dir/<name>-session.json and the history of
// each of its turns to dir/<name>-turn-N.json, and returns the paths written.
func RecordSession(ctx context.Context, c client.Client, sessionID, runID, dir, name string) ([]string, error) {
	path := filepath.Join(dir, name+"-session.json")
	hist, err := WriteHistory(ctx, c, sessionID, runID, path)
	if err != nil {
		return nil, err
	}
	paths := []string{path}
	turns, err := Turns(sessionID, hist)
	if err != nil {
		return paths, err
	}
	for _, t := range turns {
		p := filepath.Join(dir, fmt.Sprintf("%s-turn-%s.json", name, t.Name))
		if _, err := WriteHistory(ctx, c, t.WorkflowID, t.RunID, p); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// NewReplayer returns a replayer with both workflows registered under their contract names, as
// the worker registers them.
func NewReplayer() worker.WorkflowReplayer {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(workflows.AgentSession, workflow.RegisterOptions{Name: contract.SessionWorkflow})
	r.RegisterWorkflowWithOptions(workflows.AgentTurn, workflow.RegisterOptions{Name: contract.TurnWorkflow})
	return r
}

// ReplayFile replays one JSON history against the current workflow code; an error means the code
// would not continue that history (nondeterminism) or the file is not a history.
func ReplayFile(r worker.WorkflowReplayer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening %s: %w", filepath.Base(path), err)
	}
	defer f.Close()
	hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		return fmt.Errorf("reading %s: %w", filepath.Base(path), err)
	}
	if len(hist.GetEvents()) == 0 {
		return fmt.Errorf("reading %s: it has no events", filepath.Base(path))
	}
	opts := worker.ReplayWorkflowHistoryOptions{OriginalExecution: OriginalExecution(hist)}
	if err := r.ReplayWorkflowHistoryWithOptions(quietLogger(), hist, opts); err != nil {
		return fmt.Errorf("replaying %s: %w", filepath.Base(path), err)
	}
	return nil
}

// OriginalExecution recovers the workflow ID and run ID a history was recorded under. A history
// does not name its own workflow ID, but the session derives each turn's ID from it
// (contract.TurnWorkflowID), and a replay under any other ID would start differently named children
// and fail. The ID is therefore read back from the first child the history started; a history
// without children replays under the replayer's default ID, which it never uses.
func OriginalExecution(hist *historypb.History) workflow.Execution {
	var ex workflow.Execution
	for _, ev := range hist.GetEvents() {
		if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil && ex.RunID == "" {
			ex.RunID = a.GetOriginalExecutionRunId()
		}
		if a := ev.GetStartChildWorkflowExecutionInitiatedEventAttributes(); a != nil {
			if i := strings.LastIndex(a.GetWorkflowId(), "/turn-"); i > 0 {
				ex.ID = a.GetWorkflowId()[:i]
				break
			}
		}
	}
	return ex
}

// quietLogger keeps replays silent unless something goes wrong.
func quietLogger() sdklog.Logger {
	return sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}
