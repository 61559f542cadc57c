package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/gateway"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// TestResponsesCarriesReasoningBetweenTurns drives the scripted model through the real SDK client
// over the Responses wire: every reply brings a reasoning item, the transcript keeps it on the
// assistant message, and each later request hands all of them back (the fake refuses an altered
// or bare one, and counts the intact ones).
func TestResponsesCarriesReasoningBetweenTurns(t *testing.T) {
	gw := startFake(t)
	p, err := gateway.New(gateway.Config{Provider: gateway.ProviderOpenAIResponses, BaseURL: gw.BaseURL() + "/v1", APIKey: "k", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []contract.Message{
		{Role: contract.RoleSystem, Content: "You fix Go code."},
		{Role: contract.RoleUser, Content: "Make the tests pass."},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const turns = 3
	for turn := range turns {
		resp, err := p.Stream(ctx, gateway.Request{Messages: msgs, Tools: toolspec.Builtin(), CacheKey: "s"}, nil)
		if err != nil {
			t.Fatalf("turn %d: %v", turn+1, err)
		}
		if len(resp.Message.Reasoning) != 1 || len(resp.Message.ToolCalls) == 0 {
			t.Fatalf("turn %d: reply %+v, want one reasoning item and a tool call", turn+1, resp.Message)
		}
		msgs = append(msgs, resp.Message)
		for _, c := range resp.Message.ToolCalls {
			msgs = append(msgs, contract.Message{Role: contract.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: "ok"})
		}
	}
	// The client returns at response.completed, before the fake has finished recording the stream.
	st, err := gw.WaitStats(ctx, func(s fakegw.Stats) bool {
		for _, r := range s.Records {
			if r.Status == 0 {
				return false
			}
		}
		return len(s.Records) == turns
	})
	if err != nil {
		t.Fatalf("%v: %+v", err, st.Records)
	}
	recs := st.Records
	for i, r := range recs {
		if r.Format != fakegw.FormatResponses || r.Status != 200 || r.Reasoning != i {
			t.Errorf("request %d: format %s status %d carried %d reasoning items, want %d", i+1, r.Format, r.Status, r.Reasoning, i)
		}
	}
}

// startFake starts the scripted gateway on a loopback port for the test's duration.
func startFake(t *testing.T) *fakegw.Server {
	t.Helper()
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	return gw
}
