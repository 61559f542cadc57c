package gateway_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/gateway"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// TestPromptCacheHints: the Anthropic client marks three cache_control breakpoints (the last
// tool, the system prompt, the newest block) and the OpenAI clients (both APIs) send the session
// as prompt_cache_key; with NoPromptCache neither is sent. The second call of a session reads the
// first one's prefix from the fake's cache, and the usage says so.
func TestPromptCacheHints(t *testing.T) {
	cases := []struct {
		provider string
		noCache  bool
		want     string
		count    int
	}{
		{gateway.ProviderAnthropic, false, `"cache_control":{"type":"ephemeral"}`, 3},
		{gateway.ProviderAnthropic, true, `"cache_control"`, 0},
		{gateway.ProviderOpenAI, false, `"prompt_cache_key":"session-7"`, 1},
		{gateway.ProviderOpenAI, true, `"prompt_cache_key"`, 0},
		{gateway.ProviderOpenAIResponses, false, `"prompt_cache_key":"session-7"`, 1},
		{gateway.ProviderOpenAIResponses, true, `"prompt_cache_key"`, 0},
	}
	for _, c := range cases {
		t.Run(c.provider+map[bool]string{true: " without", false: " with"}[c.noCache], func(t *testing.T) {
			gw := fakegw.New(fakegw.Options{})
			var mu sync.Mutex
			var bodies [][]byte
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				bodies = append(bodies, b)
				mu.Unlock()
				r.Body = io.NopCloser(bytes.NewReader(b))
				gw.Handler().ServeHTTP(w, r)
			}))
			defer srv.Close()
			base := srv.URL
			if c.provider != gateway.ProviderAnthropic {
				base += "/v1"
			}
			p, err := gateway.New(gateway.Config{Provider: c.provider, BaseURL: base, APIKey: "k", Model: "m", NoPromptCache: c.noCache})
			if err != nil {
				t.Fatal(err)
			}
			msgs := []contract.Message{
				{Role: contract.RoleSystem, Content: strings.Repeat("Be careful. ", 400)},
				{Role: contract.RoleUser, Content: "Fix the failing test."},
			}
			var usage []contract.Usage
			for i := 0; i < 2; i++ {
				resp, err := p.Stream(context.Background(), gateway.Request{Messages: msgs, Tools: toolspec.Builtin(), CacheKey: "session-7"}, func(string) {})
				if err != nil {
					t.Fatal(err)
				}
				usage = append(usage, resp.Usage)
				msgs = append(msgs, resp.Message, contract.Message{Role: contract.RoleUser, Content: "Go on."})
			}
			if got := bytes.Count(bodies[0], []byte(c.want)); got != c.count {
				t.Fatalf("%s appears %d times in the request, want %d:\n%s", c.want, got, c.count, bodies[0])
			}
			if c.noCache && c.provider == gateway.ProviderAnthropic {
				if usage[1].CachedTokens != 0 {
					t.Fatalf("cache read without breakpoints: %+v", usage[1])
				}
				return
			}
			if u := usage[1]; u.CachedTokens <= 0 || u.CachedTokens >= u.InputTokens {
				t.Fatalf("second call usage %+v: want a cache read within the input", u)
			}
		})
	}
}
