// Package toolhooks wraps the activities' tool runner for the demo, the self-test and the drills:
// an injected tool fault, and a side-effect log that proves no tool call ran twice. The wiring
// adds them when a worker starts; the activity, its request and the tools never know.
package toolhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/keelrun/keel/activities"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// Hook wraps a tool runner.
type Hook = func(activities.ToolRunner) activities.ToolRunner

// ForMode returns the hooks a demo fault mode needs on the tool side (none for most modes, which
// live in the fake gateway).
func ForMode(mode string) []Hook {
	if mode == fakegw.ModeToolError {
		return []Hook{FailFirstWrite}
	}
	return nil
}

// FailFirstWrite makes the first write_file of each session fail before anything is written, so
// the "retry as is" path runs end to end. It remembers sessions for the life of the process,
// which is what a demo worker needs.
func FailFirstWrite(next activities.ToolRunner) activities.ToolRunner {
	var mu sync.Mutex
	failed := map[string]bool{}
	return activities.ToolRunnerFunc(func(ctx context.Context, req contract.ToolRequest) (contract.ToolResult, error) {
		if req.Call.Name != toolspec.WriteFile || req.Server != "" {
			return next.Run(ctx, req)
		}
		mu.Lock()
		first := !failed[req.SessionID]
		failed[req.SessionID] = true
		mu.Unlock()
		if !first {
			return next.Run(ctx, req)
		}
		var a struct{ Path string }
		_ = json.Unmarshal([]byte(req.Call.Arguments), &a) // a bad argument text names no file
		name := fmt.Sprintf("%q", filepath.ToSlash(filepath.Clean(a.Path)))
		if filepath.IsAbs(a.Path) {
			name = "that path" // never show the model where the work directory really is
		}
		return contract.ToolResult{
			Content: fmt.Sprintf("The write to %s failed and the file is unchanged; retry as is.", name),
			IsError: true,
		}, nil
	})
}

// Effect is one line of the side-effect log: one tool execution, written before the tool runs.
type Effect struct {
	Workflow string `json:"workflow"`
	Activity string `json:"activity"`
	Attempt  int32  `json:"attempt"`
	Session  string `json:"session"`
	CallID   string `json:"call_id"`
	Tool     string `json:"tool"`
	Time     string `json:"time"`
}

// RecordEffects returns a hook that appends every execution to the file at path before the tool
// runs. One O_APPEND write per line keeps lines whole across workers on one machine.
func RecordEffects(path string) Hook {
	return func(next activities.ToolRunner) activities.ToolRunner {
		return activities.ToolRunnerFunc(func(ctx context.Context, req contract.ToolRequest) (contract.ToolResult, error) {
			if err := appendEffect(ctx, path, req); err != nil {
				return contract.ToolResult{}, err
			}
			return next.Run(ctx, req)
		})
	}
}

func appendEffect(ctx context.Context, path string, req contract.ToolRequest) error {
	info := activity.GetInfo(ctx)
	b, err := json.Marshal(Effect{
		Workflow: info.WorkflowExecution.ID, Activity: info.ActivityID, Attempt: info.Attempt,
		Session: req.SessionID, CallID: req.Call.ID, Tool: req.Call.Name, Time: time.Now().UTC().Format(time.RFC3339Nano),
	})
	if err != nil {
		return fmt.Errorf("encoding a side-effect log line: %w", err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("opening the side-effect log: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing the side-effect log: %w", err)
	}
	return nil
}
