package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/keelrun/keel/activities"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/gateway"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// compactRun is what a session of turns cost with compaction at a given window (0: none).
type compactRun struct {
	lastInput, allInput int64
	lastBilled          float64
	allBilled           float64
	compactions         int
	summaryTokens       int64
	saved               int64
}

// runCompacting sends turns model calls of one growing session (each turn a tool call and a 2 KB
// result, as in runTurns) through the real client to the fake gateway, with the transcript in a
// file store. Before a turn it applies the session's rule (workflows/compact.go: the last call's
// input at 80 % of the window, four turns done, two turns since the last try) and runs the real
// CompactTranscript activity; each call sends what CallModel would: the compaction's start and
// the full transcript from its cut on.
func runCompacting(t testing.TB, provider string, turns int, window int64) compactRun {
	ctx := context.Background()
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	base := gw.BaseURL()
	if provider != gateway.ProviderAnthropic {
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
	env.RegisterActivityWithOptions(acts.CompactTranscript, activity.RegisterOptions{Name: contract.CompactActivity})

	head, err := st.Append(ctx, "", []contract.Message{
		{Role: contract.RoleSystem, Content: "You are a careful engineer. " + strings.Repeat("Keep changes small and run the tests. ", 40)},
		{Role: contract.RoleUser, Content: "The tests fail. Find the bug and fix it."},
	})
	if err != nil {
		t.Fatal(err)
	}
	file := strings.Repeat("func Add(a, b int) int { return a - b } // the line under suspicion\n", 30)
	var run compactRun
	var view *contract.Compaction
	compactAt := 0
	for i := 1; i <= turns; i++ {
		done := i - 1
		if contract.CompactionDue(window, run.lastInput, done, compactAt) {
			compactAt = done + contract.CompactEveryTurns
			val, err := env.ExecuteActivity(contract.CompactActivity, contract.CompactRequest{SessionID: "s", Turn: done, Head: head, Compaction: view, KeepReplies: contract.CompactKeepReplies, MinReplies: contract.CompactMinReplies})
			if err != nil {
				t.Fatalf("compacting after turn %d: %v", done, err)
			}
			var res contract.CompactResult
			if err := val.Get(&res); err != nil {
				t.Fatal(err)
			}
			if res.Compaction != nil {
				view = res.Compaction
				run.compactions++
				run.summaryTokens += res.Usage.Total()
				run.saved += res.SavedTokens
				run.allBilled += float64(res.Usage.InputTokens)
			}
		}
		msgs, err := st.Load(ctx, head)
		if err != nil {
			t.Fatal(err)
		}
		if view != nil {
			start, err := st.Load(ctx, view.Head)
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(start, msgs[view.Cut:]...)
		}
		resp, err := p.Stream(ctx, gateway.Request{Messages: msgs, Tools: toolspec.Builtin(), CacheKey: "session-1"}, func(string) {})
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		run.lastInput, run.lastBilled = resp.Usage.InputTokens, billed(resp.Usage)
		run.allInput += resp.Usage.InputTokens
		run.allBilled += run.lastBilled
		id := fmt.Sprintf("call_%d", i)
		head, err = st.Append(ctx, head, []contract.Message{
			{Role: contract.RoleAssistant, Content: "Reading the next file.", ToolCalls: []contract.ToolCall{{ID: id, Name: "read_file", Arguments: fmt.Sprintf(`{"path":"pkg%d/calc.go"}`, i)}}},
			{Role: contract.RoleTool, ToolCallID: id, Name: "read_file", Content: fmt.Sprintf("// pkg%d\n%s", i, file)},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return run
}

// TestCompactionBoundsInput: with limits.context_tokens at 8,000, a 50-turn session's model calls
// stay within the window once it fills (the input of turn 50 is under the window, where without
// compaction it is about 30,000 tokens), and the whole session sends fewer input tokens, the
// summary calls included.
func TestCompactionBoundsInput(t *testing.T) {
	const turns, window = 50, 8000
	for _, provider := range []string{gateway.ProviderAnthropic, gateway.ProviderOpenAI} {
		t.Run(provider, func(t *testing.T) {
			with := runCompacting(t, provider, turns, window)
			without := runCompacting(t, provider, turns, 0)
			t.Logf("%s turn %d input: %d tokens with compaction at %d, %d without; all %d turns %d vs %d input tokens (%.2f), billed-equivalent %.0f vs %.0f (%.2f); %d compactions, %d summary tokens, about %d tokens saved a call",
				provider, turns, with.lastInput, window, without.lastInput, turns, with.allInput, without.allInput, float64(with.allInput)/float64(without.allInput),
				with.allBilled, without.allBilled, with.allBilled/without.allBilled, with.compactions, with.summaryTokens, with.saved/int64(max(with.compactions, 1)))
			if with.compactions == 0 || with.lastInput >= window {
				t.Errorf("turn %d sent %d input tokens after %d compactions, want it under the window of %d", turns, with.lastInput, with.compactions, window)
			}
			if with.allInput+with.summaryTokens >= without.allInput {
				t.Errorf("compaction did not reduce the session's input: %d (+%d summary) vs %d", with.allInput, with.summaryTokens, without.allInput)
			}
		})
	}
}
