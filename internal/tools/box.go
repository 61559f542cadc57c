// Package tools runs Keel's built-in agent tools against a work directory. It is the I/O side of
// package toolspec and runs inside tool activities, which get exactly one attempt: a write may
// already have happened, so a failure is never retried but returned to the model as a result that
// says whether anything changed and what to do next.
//
// run_command starts programs in their own process groups and stops a group as a whole, so the
// package builds on Unix systems only.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"reflect"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/sandbox"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// Box is a work directory and the rules for running tools in it. Every path a tool is given is
// resolved inside Root; nothing outside it is read, written or run.
type Box struct {
	// Root is the work directory.
	Root string
	// Policy is the session's command allow list and command timeout.
	Policy contract.ToolLimits
	// Settings are the worker's, the same for every call.
	Settings
	// Live, when set, also receives a running command's output as it arrives, for people
	// watching the session. It must not block: the command's output pipe waits on it.
	Live io.Writer
	// SandboxFailed, when set, hears why a command's sandbox could not be set up. The model only
	// learns that commands cannot run; the operator needs the reason (a work directory on a
	// filesystem without idmapped mounts, a cache folder that cannot be created), and the worker
	// logs it.
	SandboxFailed func(err error)
}

// Settings are a worker's tool settings: internal/app builds them once from the configuration,
// and every Box of the worker runs with them.
type Settings struct {
	// WorkerTools are the settings of the configuration's tools keys (OutputCap: how many bytes
	// of command output are kept; the rest is cut, and the result says how much).
	contract.WorkerTools
	// Sandbox confines run_command (see package sandbox); nil runs commands unconfined.
	Sandbox *sandbox.Config
}

// Run executes one tool call. It never fails in the Go sense: every failure is a result with
// IsError set, Content written for the model and Changed saying whether anything changed.
// A command that ran counts as a change (Changed true, whatever its exit status), because nothing
// tells what it touched. Cancelling ctx stops a running command's whole process group; the
// activity that calls Run must heartbeat for the cancellation to reach ctx.
func (b *Box) Run(ctx context.Context, call contract.ToolCall) contract.ToolResult {
	specs := toolspec.Builtin()
	spec, ok := toolspec.Lookup(specs, call.Name)
	if !ok {
		return refused(toolspec.UnknownToolFeedback(call.Name, toolspec.Names(specs)))
	}
	if p := toolspec.Validate(spec, call.Arguments); p != nil {
		return refused(p.Feedback(call.Name, -1))
	}
	root, err := b.root()
	if err != nil {
		return refused("The work directory is not available, so nothing was run and nothing changed. " +
			"Conclude and report that the work directory is missing.")
	}
	if r, ok := runners[call.Name]; ok {
		return r.run(b, ctx, root, call.Arguments)
	}
	return refused(toolspec.UnknownToolFeedback(call.Name, toolspec.Names(specs)))
}

// runner runs one built-in tool from its argument text: the I/O half of the tool's row in
// toolspec, decoding into the row's own argument struct (TestEveryToolRuns).
type runner struct {
	args reflect.Type
	run  func(b *Box, ctx context.Context, root, args string) contract.ToolResult
}

// runs makes a runner that decodes the arguments into A and calls f.
func runs[A any](f func(b *Box, ctx context.Context, root string, a A) contract.ToolResult) runner {
	return runner{args: reflect.TypeFor[A](), run: func(b *Box, ctx context.Context, root, args string) contract.ToolResult {
		var a A
		decodeArgs(args, &a)
		return f(b, ctx, root, a)
	}}
}

// runners are the built-in tools' runners by name.
var runners = map[string]runner{
	toolspec.ReadFile: runs(func(b *Box, _ context.Context, root string, a toolspec.ReadFileArgs) contract.ToolResult {
		return b.readFile(root, a.Path)
	}),
	toolspec.WriteFile: runs(func(b *Box, _ context.Context, root string, a toolspec.WriteFileArgs) contract.ToolResult {
		return b.writeFile(root, a.Path, a.Content)
	}),
	toolspec.EditFile: runs(func(b *Box, _ context.Context, root string, a toolspec.EditFileArgs) contract.ToolResult {
		return b.editFile(root, a.Path, a.Old, a.New)
	}),
	toolspec.ListDir: runs(func(b *Box, _ context.Context, root string, a toolspec.ListDirArgs) contract.ToolResult {
		return b.listDir(root, a.Path, walkBounds)
	}),
	toolspec.Search: runs(func(b *Box, _ context.Context, root string, a toolspec.SearchArgs) contract.ToolResult {
		return b.search(root, a.Pattern, a.Path, walkBounds)
	}),
	toolspec.RunCommand: runs(func(b *Box, ctx context.Context, root string, a toolspec.RunCommandArgs) contract.ToolResult {
		return b.runCommand(ctx, root, a.Command, a.TimeoutSeconds)
	}),
	// The turn workflow runs delegate itself (a child session); a call that reaches a tool
	// activity came from a turn that cannot, and nothing was started.
	toolspec.Delegate: runs(func(_ *Box, _ context.Context, _ string, _ toolspec.DelegateArgs) contract.ToolResult {
		return refused("delegate is not available in this session; nothing was started. Do the task with your other tools.")
	}),
}

// root resolves the work directory to its resolved, absolute path once per call.
func (b *Box) root() (string, error) {
	abs, err := filepath.Abs(b.Root)
	if err != nil {
		return "", fmt.Errorf("resolving the work directory: %w", err)
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("resolving the work directory: %w", err)
	}
	return resolved, nil
}

// decodeArgs fills a struct from arguments that toolspec.Validate has already accepted; empty
// text stands for {}.
func decodeArgs(args string, v any) {
	if args == "" {
		return
	}
	_ = json.Unmarshal([]byte(args), v) // validated above
}

// refused is a failure that changed nothing.
func refused(msg string) contract.ToolResult {
	return contract.ToolResult{Content: msg, IsError: true}
}

// done is a successful result.
func done(msg string, changed bool) contract.ToolResult {
	return contract.ToolResult{Content: msg, Changed: changed}
}

// IsPolicyViolation reports whether a result is a refusal by the tool policy (a program not on
// the allow list). The session feeds it back and also escalates it.
func IsPolicyViolation(res contract.ToolResult) bool { return toolspec.IsPolicyViolation(res) }
