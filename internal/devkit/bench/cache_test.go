package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/gateway"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// Anthropic's prices relative to an uncached input token: a cache write costs 1.25, a cache read
// 0.1. They turn counted tokens into billed-equivalent tokens here, in the measurement only.
const (
	cacheWriteRate = 1.25
	cacheReadRate  = 0.1
)

// billed is the input of one call in billed-equivalent tokens.
func billed(u contract.Usage) float64 {
	uncached := u.InputTokens - u.CachedTokens - u.CacheWriteTokens
	return float64(uncached) + cacheWriteRate*float64(u.CacheWriteTokens) + cacheReadRate*float64(u.CachedTokens)
}

// cacheRun is what a session of turns cost, measured at its last turn and in all.
type cacheRun struct {
	last       contract.Usage
	lastBilled float64
	allBilled  float64
	allInput   int64
}

// runTurns sends turns model calls of one growing session (each turn a tool call and a 2 KB
// result, as when the model reads files) through the real Anthropic client to the fake gateway,
// and sums what each call's input was billed.
func runTurns(t testing.TB, provider string, turns int, noCache bool) cacheRun {
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	base := gw.BaseURL()
	if provider != gateway.ProviderAnthropic {
		base += "/v1"
	}
	p, err := gateway.New(gateway.Config{Provider: provider, BaseURL: base, APIKey: "k", Model: "m", NoPromptCache: noCache})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []contract.Message{
		{Role: contract.RoleSystem, Content: "You are a careful engineer. " + strings.Repeat("Keep changes small and run the tests. ", 40)},
		{Role: contract.RoleUser, Content: "The tests fail. Find the bug and fix it."},
	}
	file := strings.Repeat("func Add(a, b int) int { return a - b } // the line under suspicion\n", 30)
	var run cacheRun
	for i := 1; i <= turns; i++ {
		resp, err := p.Stream(context.Background(), gateway.Request{Messages: msgs, Tools: toolspec.Builtin(), CacheKey: "session-1"}, func(string) {})
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		run.last, run.lastBilled = resp.Usage, billed(resp.Usage)
		run.allBilled += run.lastBilled
		run.allInput += resp.Usage.InputTokens
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			contract.Message{Role: contract.RoleAssistant, Content: "Reading the next file.", ToolCalls: []contract.ToolCall{{ID: id, Name: "read_file", Arguments: fmt.Sprintf(`{"path":"pkg%d/calc.go"}`, i)}}},
			contract.Message{Role: contract.RoleTool, ToolCallID: id, Name: "read_file", Content: fmt.Sprintf("// pkg%d\n%s", i, file)},
		)
	}
	return run
}

// TestPromptCacheHalvesBilledInput: with cache_control breakpoints on the stable prefix, the
// input billed for turn 50 of a session is at most half of what it is without them, and the
// fake reports the cache the way the API does (reads and writes within the input).
func TestPromptCacheHalvesBilledInput(t *testing.T) {
	const turns = 50
	with := runTurns(t, gateway.ProviderAnthropic, turns, false)
	without := runTurns(t, gateway.ProviderAnthropic, turns, true)
	oa := runTurns(t, gateway.ProviderOpenAI, turns, false)
	rs := runTurns(t, gateway.ProviderOpenAIResponses, turns, false)
	t.Logf("anthropic turn %d input %d tokens: with caching %d read, %d written, billed %.0f; without billed %.0f (%.2f); all %d turns billed %.0f vs %.0f (%.2f)",
		turns, with.last.InputTokens, with.last.CachedTokens, with.last.CacheWriteTokens, with.lastBilled, without.lastBilled,
		with.lastBilled/without.lastBilled, turns, with.allBilled, without.allBilled, with.allBilled/without.allBilled)
	t.Logf("openai turn %d: %d input tokens, %d cached (prompt_cache_key)", turns, oa.last.InputTokens, oa.last.CachedTokens)
	t.Logf("openai-responses turn %d: %d input tokens, %d cached (prompt_cache_key)", turns, rs.last.InputTokens, rs.last.CachedTokens)
	if with.last.InputTokens != without.last.InputTokens {
		t.Errorf("caching changed the input: %d vs %d tokens", with.last.InputTokens, without.last.InputTokens)
	}
	if without.last.CachedTokens != 0 || without.last.CacheWriteTokens != 0 {
		t.Errorf("without breakpoints the fake reported cache use: %+v", without.last)
	}
	if with.lastBilled > without.lastBilled/2 {
		t.Errorf("turn %d billed %.0f input tokens with caching, more than half of %.0f without", turns, with.lastBilled, without.lastBilled)
	}
	for name, r := range map[string]cacheRun{"openai": oa, "openai-responses": rs} {
		if r.last.CachedTokens == 0 || r.last.CachedTokens%128 != 0 || r.last.CachedTokens > r.last.InputTokens {
			t.Errorf("%s cached tokens %d of %d: want a positive multiple of 128 within the input", name, r.last.CachedTokens, r.last.InputTokens)
		}
	}
}
