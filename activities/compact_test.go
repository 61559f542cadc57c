package activities_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/keelrun/keel/activities"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/demo"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/gateway"
	"github.com/keelrun/keel/internal/store"
)

// demoTurn is one turn of the demo script as it lands in the transcript: the model's call and the
// tool's result.
func demoTurn(n int, name, key, value, result string) []contract.Message {
	args, _ := json.Marshal(map[string]string{key: value})
	id := fmt.Sprintf("call_%d", n)
	return []contract.Message{
		{Role: contract.RoleAssistant, Content: fmt.Sprintf("Step %d.", n), ToolCalls: []contract.ToolCall{{ID: id, Name: name, Arguments: string(args)}}},
		{Role: contract.RoleTool, ToolCallID: id, Name: name, Content: result},
	}
}

// TestCompactTranscript drives CompactTranscript and CallModel against the fake gateway over HTTP,
// in both wire formats: a compaction folds the oldest replies (never parting a call from its
// result), leaves the full transcript as it was, and the next model call carries the summary
// instead of the folded turns, so the scripted model goes on where it was. A second compaction
// folds the first summary in; too little to fold makes no model call.
func TestCompactTranscript(t *testing.T) {
	for _, provider := range []string{gateway.ProviderOpenAI, gateway.ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			ctx := context.Background()
			gw := fakegw.New(fakegw.Options{})
			if err := gw.Start("127.0.0.1:0"); err != nil {
				t.Fatal(err)
			}
			defer gw.Close()
			base := gw.BaseURL()
			if provider == gateway.ProviderOpenAI {
				base += "/v1"
			}
			p, err := gateway.New(gateway.Config{Provider: provider, BaseURL: base, APIKey: "k", Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			st, err := store.OpenFile(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			acts := &activities.Activities{Models: activities.Solo(p), Store: st}
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			env.RegisterActivityWithOptions(acts.CallModel, activity.RegisterOptions{Name: contract.CallModelActivity})
			env.RegisterActivityWithOptions(acts.CompactTranscript, activity.RegisterOptions{Name: contract.CompactActivity})
			compact := func(req contract.CompactRequest) contract.CompactResult {
				t.Helper()
				req.SessionID, req.KeepReplies, req.MinReplies = "s", 2, 2
				val, err := env.ExecuteActivity(contract.CompactActivity, req)
				if err != nil {
					t.Fatalf("compacting: %v", err)
				}
				var res contract.CompactResult
				if err := val.Get(&res); err != nil {
					t.Fatal(err)
				}
				return res
			}

			src, err := demo.Source(demo.SourceFile)
			if err != nil {
				t.Fatal(err)
			}
			listing := strings.Repeat("calc.go\ncalc_test.go\ngo.mod\nREADME.md\n", 20)
			failing := "--- FAIL: TestAdd\nFAIL"
			msgs := []contract.Message{{Role: contract.RoleSystem, Content: "be careful"}, {Role: contract.RoleUser, Content: "fix the failing test"}}
			msgs = append(msgs, demoTurn(1, "list_dir", "path", ".", listing)...)
			msgs = append(msgs, demoTurn(2, "read_file", "path", demo.SourceFile, src)...)
			msgs = append(msgs, demoTurn(3, "run_command", "command", demo.TestCommand, failing)...)
			fix := demoTurn(4, "write_file", "path", demo.SourceFile, "Wrote 40 bytes.")
			stored := append(slices.Clone(msgs), fix[0]) // the last result is still pending
			head, err := st.Append(ctx, "", stored)
			if err != nil {
				t.Fatal(err)
			}

			res := compact(contract.CompactRequest{Turn: 4, Head: head})
			if res.Compaction == nil || res.Replies != 2 || res.Usage.Total() == 0 || res.SavedTokens <= 0 {
				t.Fatalf("compaction result %+v", res)
			}
			if got := stored[res.Compaction.Cut]; got.Role != contract.RoleAssistant || got.ToolCalls[0].Name != "run_command" {
				t.Fatalf("the cut is at %d (%+v), want the third reply", res.Compaction.Cut, got)
			}
			full, err := st.Load(ctx, head)
			if err != nil || len(full) != len(stored) {
				t.Fatalf("the full transcript changed: %d messages, want %d (%v)", len(full), len(stored), err)
			}
			view, err := st.Load(ctx, res.Compaction.Head)
			if err != nil || len(view) != 3 || !strings.HasPrefix(view[2].Content, contract.CompactionPrefix) {
				t.Fatalf("the compaction's start: %+v (%v)", view, err)
			}
			for _, want := range []string{`done: list_dir {"path":"."}`, "done: read_file"} {
				if !strings.Contains(view[2].Content, want) {
					t.Errorf("the summary lacks %q:\n%s", want, view[2].Content)
				}
			}
			if r := gw.Stats().Records; !r[len(r)-1].Compact {
				t.Error("the fake did not see a compaction request")
			}

			val, err := env.ExecuteActivity(contract.CallModelActivity, contract.ModelRequest{
				SessionID: "s", Turn: 5, Head: head, Append: fix[1:], ModelSettings: contract.ModelSettings{Model: "m"}, Compaction: res.Compaction,
			})
			if err != nil {
				t.Fatal(err)
			}
			var resp contract.ModelResponse
			if err := val.Get(&resp); err != nil {
				t.Fatal(err)
			}
			recs := gw.Stats().Records
			last := recs[len(recs)-1]
			if !last.Summarised || len(last.Calls) != 2 || !strings.HasPrefix(last.Calls[0], "run_command") || !strings.HasPrefix(last.Calls[1], "write_file") {
				t.Fatalf("the model call after the compaction saw summary=%v calls %q, want the summary and the last two calls", last.Summarised, last.Calls)
			}
			if calls := resp.Message.ToolCalls; len(calls) != 1 || calls[0].Name != "run_command" {
				t.Fatalf("the model did not go on where it was: %+v", resp.Message)
			}
			if full, _ := st.Load(ctx, resp.Head); len(full) != len(stored)+2 {
				t.Fatalf("the reply was not appended to the full transcript: %d messages", len(full))
			}

			// Two more turns, then a second compaction folds the first summary and the next two.
			more := append(fix[1:], resp.Message, contract.Message{Role: contract.RoleTool, ToolCallID: resp.Message.ToolCalls[0].ID, Name: "run_command", Content: "ok"})
			more = append(more, contract.Message{Role: contract.RoleAssistant, Content: "Checking once more.", ToolCalls: []contract.ToolCall{{ID: "call_6", Name: "list_dir", Arguments: `{"path":"."}`}}})
			head2, err := st.Append(ctx, head, more)
			if err != nil {
				t.Fatal(err)
			}
			n := len(gw.Stats().Records)
			if again := compact(contract.CompactRequest{Turn: 4, Head: head, Compaction: res.Compaction}); again.Compaction != nil {
				t.Fatalf("nothing past the last cut was folded again: %+v", again)
			}
			if got := len(gw.Stats().Records); got != n {
				t.Fatalf("too little to fold still called the model (%d requests)", got-n)
			}
			second := compact(contract.CompactRequest{Turn: 6, Head: head2, Compaction: res.Compaction})
			if second.Compaction == nil || second.Replies != 4 || second.Compaction.Cut <= res.Compaction.Cut {
				t.Fatalf("second compaction %+v after %+v", second, res)
			}
			view2, err := st.Load(ctx, second.Compaction.Head)
			if err != nil || len(view2) != 3 {
				t.Fatalf("the second compaction's start: %+v (%v)", view2, err)
			}
			for _, want := range []string{"done: list_dir", "done: read_file", "done: run_command", "done: write_file"} {
				if !strings.Contains(view2[2].Content, want) {
					t.Errorf("the second summary lacks %q:\n%s", want, view2[2].Content)
				}
			}
		})
	}
}

// TestCompactionCutKeepsCallsWithResults: whatever the transcript holds (several calls in one reply,
// a reply a person interrupted, a person's message, Keel's own notes), the cut falls just before a
// model reply, so every folded call has its result folded with it and every kept result its call.
func TestCompactionCutKeepsCallsWithResults(t *testing.T) {
	ctx := context.Background()
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	p, err := gateway.New(gateway.Config{Provider: gateway.ProviderOpenAI, BaseURL: gw.BaseURL() + "/v1", APIKey: "k", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	acts := &activities.Activities{Models: activities.Solo(p), Store: st}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(acts.CompactTranscript, activity.RegisterOptions{Name: contract.CompactActivity})

	long := strings.Repeat("output line\n", 200)
	two := contract.Message{Role: contract.RoleAssistant, Content: "Two at once.", ToolCalls: []contract.ToolCall{
		{ID: "a", Name: "read_file", Arguments: `{"path":"a.go"}`}, {ID: "b", Name: "read_file", Arguments: `{"path":"b.go"}`}}}
	msgs := []contract.Message{
		{Role: contract.RoleUser, Content: "fix the failing test"},
		two,
		{Role: contract.RoleTool, ToolCallID: "a", Name: "read_file", Content: long},
		{Role: contract.RoleTool, ToolCallID: "b", Name: "read_file", Content: long},
		{Role: contract.RoleAssistant, Content: "I was saying", Note: "interrupted"},
		{Role: contract.RoleUser, Content: contract.PersonPrefix + "look at b.go first", Note: "say"},
	}
	msgs = append(msgs, demoTurn(2, "run_command", "command", "go test ./...", long)...)
	msgs = append(msgs, contract.Message{Role: contract.RoleAssistant, Content: "Two more.", ToolCalls: []contract.ToolCall{
		{ID: "c", Name: "read_file", Arguments: `{"path":"c.go"}`}, {ID: "d", Name: "read_file", Arguments: `{"path":"d.go"}`}}},
		contract.Message{Role: contract.RoleTool, ToolCallID: "c", Name: "read_file", Content: long},
		contract.Message{Role: contract.RoleTool, ToolCallID: "d", Name: "read_file", Content: long})
	msgs = append(msgs, demoTurn(4, "list_dir", "path", ".", "a.go b.go")...)
	msgs = append(msgs, contract.Message{Role: contract.RoleUser, Note: "limit", Content: "[keel] stopped"})
	msgs = append(msgs, demoTurn(5, "list_dir", "path", "sub", "c.go")...)
	head, err := st.Append(ctx, "", msgs)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		keep, min int
		// wantCut is the index of the first kept message; 0 means nothing is folded.
		wantCut int
	}{
		{keep: 2, min: 2, wantCut: 11},
		{keep: 1, min: 2, wantCut: 14},
		{keep: 3, min: 2, wantCut: 8},
		{keep: 4, min: 2, wantCut: 0},
		{keep: 4, min: 1, wantCut: 6},
		{keep: 5, min: 1, wantCut: 0},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("keep %d of 5, fold at least %d", c.keep, c.min), func(t *testing.T) {
			val, err := env.ExecuteActivity(contract.CompactActivity, contract.CompactRequest{SessionID: "s", Turn: 5, Head: head, KeepReplies: c.keep, MinReplies: c.min})
			if err != nil {
				t.Fatal(err)
			}
			var res contract.CompactResult
			if err := val.Get(&res); err != nil {
				t.Fatal(err)
			}
			if c.wantCut == 0 {
				if res.Compaction != nil {
					t.Fatalf("folded at %d, want nothing folded", res.Compaction.Cut)
				}
				return
			}
			if res.Compaction == nil || res.Compaction.Cut != c.wantCut {
				t.Fatalf("result %+v, want the cut at %d", res, c.wantCut)
			}
			calls := map[string]bool{}
			for _, m := range msgs[:c.wantCut] {
				for _, tc := range m.ToolCalls {
					calls[tc.ID] = true
				}
			}
			for i, m := range msgs {
				if m.Role == contract.RoleTool && calls[m.ToolCallID] != (i < c.wantCut) {
					t.Errorf("the result of call %s (message %d) is on the other side of the cut from its call", m.ToolCallID, i)
				}
			}
		})
	}
}

// scriptedSummary is a provider that answers every request with one fixed reply.
type scriptedSummary struct{ reply contract.Message }

func (s scriptedSummary) Name() string { return "scripted" }

func (s scriptedSummary) Stream(context.Context, gateway.Request, func(string)) (gateway.Response, error) {
	return gateway.Response{Message: s.reply, Usage: contract.Usage{InputTokens: 100, OutputTokens: 10}}, nil
}

// TestCompactionDistrustsTheSummary: the model is not trusted with the summary either. One that
// runs on is cut to 16 KiB, so it cannot fill the window it should free; an empty one, or tool calls
// instead of text, fails the compaction (the session goes on without it) and stores nothing.
func TestCompactionDistrustsTheSummary(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		reply   contract.Message
		wantLen int // 0: the compaction fails
	}{
		{name: "runs on", reply: contract.Message{Role: contract.RoleAssistant, Content: strings.Repeat("all work and no play ", 10_000)}, wantLen: 16 << 10},
		{name: "empty", reply: contract.Message{Role: contract.RoleAssistant, Content: "  \n"}},
		{name: "tool calls instead", reply: contract.Message{Role: contract.RoleAssistant, ToolCalls: []contract.ToolCall{{ID: "x", Name: "run_command", Arguments: `{"command":"rm -rf /"}`}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, err := store.OpenFile(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			msgs := []contract.Message{{Role: contract.RoleUser, Content: "fix the failing test"}}
			for i := 1; i <= 4; i++ {
				msgs = append(msgs, demoTurn(i, "read_file", "path", fmt.Sprintf("f%d.go", i), strings.Repeat("x", 500))...)
			}
			head, err := st.Append(ctx, "", msgs)
			if err != nil {
				t.Fatal(err)
			}
			acts := &activities.Activities{Models: activities.Solo(scriptedSummary{c.reply}), Store: st}
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			env.RegisterActivityWithOptions(acts.CompactTranscript, activity.RegisterOptions{Name: contract.CompactActivity})
			val, err := env.ExecuteActivity(contract.CompactActivity, contract.CompactRequest{SessionID: "s", Turn: 4, Head: head, KeepReplies: 2, MinReplies: 2})
			if c.wantLen == 0 {
				_, f := failureOf(t, err)
				if f.Class != contract.ClassSchema {
					t.Fatalf("want a surfaced schema failure, got %+v (%v)", f, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var res contract.CompactResult
			if err := val.Get(&res); err != nil || res.Compaction == nil {
				t.Fatalf("result %+v (%v)", res, err)
			}
			start, err := st.Load(ctx, res.Compaction.Head)
			if err != nil {
				t.Fatal(err)
			}
			summary := start[len(start)-1].Content
			if n := len(summary) - len(contract.CompactionPrefix); n > c.wantLen+16 || !strings.HasSuffix(summary, "[…]") {
				t.Fatalf("the summary kept %d bytes (ends %q), want at most %d and a mark that it was cut", n, summary[len(summary)-10:], c.wantLen)
			}
		})
	}
}
