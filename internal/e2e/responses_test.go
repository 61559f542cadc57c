package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
)

// TestResponsesDemoCarriesReasoning runs the demo on OpenAI's Responses wire through the real
// starter, worker and dev server against a fake gateway this test watches. Every reply brings a
// reasoning item; the worker keeps it in the stored transcript, and each later model call hands
// back the items of all the turns before it, intact (the fake refuses an altered or bare one), so
// request n carries n-1 of them.
func TestResponsesDemoCarriesReasoning(t *testing.T) {
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	r := runStarter(t, []string{"KEEL_GATEWAY_PROVIDER=" + contract.ProviderOpenAIResponses, "KEEL_GATEWAY_BASE_URL=" + gw.BaseURL() + "/v1"},
		"demo", "--output", "jsonl")
	s := r.Summary
	if r.Code != 0 || s.Status != contract.StatusCompleted || s.Turns < 3 {
		t.Fatalf("demo: exit %d, summary %+v\nstderr:\n%s", r.Code, s, r.Stderr)
	}
	if s.CachedTokens <= 0 {
		t.Errorf("cached_tokens %d, want the later calls to read the session's prefix from the cache", s.CachedTokens)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	st, err := gw.WaitStats(ctx, func(st fakegw.Stats) bool {
		for _, rec := range st.Records {
			if rec.Status == 0 {
				return false
			}
		}
		return len(st.Records) == s.GatewayAttempts
	})
	if err != nil {
		t.Fatalf("the gateway saw %d requests, the summary counts %d attempts: %v", len(st.Records), s.GatewayAttempts, err)
	}
	for i, rec := range st.Records {
		if rec.Format != fakegw.FormatResponses || rec.Status != 200 || rec.Reasoning != i {
			t.Errorf("model call %d: format %s, status %d, carried %d reasoning items; want %s, 200, %d",
				i+1, rec.Format, rec.Status, rec.Reasoning, fakegw.FormatResponses, i)
		}
	}
}
