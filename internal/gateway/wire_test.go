package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// gw is a local gateway for one test. It answers only the provider's real path, counts the
// requests it receives, and keeps the last request's body and headers.
type gw struct {
	srv      *httptest.Server
	provider string
	requests atomic.Int32
	mu       sync.Mutex
	body     []byte
	header   http.Header
}

// paths are the endpoints each provider's SDK posts to.
var paths = map[string]string{
	ProviderOpenAI:          "/v1/chat/completions",
	ProviderOpenAIResponses: "/v1/responses",
	ProviderAnthropic:       "/v1/messages",
}

func newGW(t *testing.T, provider string, h http.HandlerFunc) *gw {
	t.Helper()
	g := &gw{provider: provider}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.requests.Add(1)
		body, _ := io.ReadAll(r.Body)
		g.mu.Lock()
		g.body, g.header = body, r.Header.Clone()
		g.mu.Unlock()
		if r.Method != http.MethodPost || r.URL.Path != paths[provider] {
			http.Error(w, "no such route", http.StatusNotFound)
			return
		}
		h(w, r)
	}))
	t.Cleanup(g.srv.Close)
	return g
}

// client builds the provider under test against this gateway, with the base URL each SDK expects.
func (g *gw) client(t *testing.T) Provider {
	t.Helper()
	base := g.srv.URL
	if g.provider != ProviderAnthropic {
		base += "/v1"
	}
	p, err := New(Config{Provider: g.provider, BaseURL: base, APIKey: "test-key", Model: "gw-model", HTTPClient: g.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != g.provider {
		t.Fatalf("Name() = %q, want %q", p.Name(), g.provider)
	}
	return p
}

// request decodes the last request body.
func (g *gw) request(t *testing.T) map[string]any {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	var m map[string]any
	if err := json.Unmarshal(g.body, &m); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, g.body)
	}
	return m
}

// stream runs one Stream call and records the deltas.
func stream(t *testing.T, p Provider, req Request) (Response, []string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var deltas []string
	res, err := p.Stream(ctx, req, func(s string) { deltas = append(deltas, s) })
	return res, deltas, err
}

// testRequest is a transcript with every role and a tool.
func testRequest() Request {
	return Request{
		Messages: []contract.Message{
			{Role: contract.RoleSystem, Content: "You are terse."},
			{Role: contract.RoleUser, Content: "Read a.go"},
			{Role: contract.RoleAssistant, Content: "Reading.", ToolCalls: []contract.ToolCall{
				{ID: "call_0", Name: "read_file", Arguments: `{"path":"a.go"}`},
			}},
			{Role: contract.RoleTool, ToolCallID: "call_0", Name: "read_file", Content: "no such file", IsError: true},
		},
		Tools: []contract.ToolSpec{{
			Name: "read_file", Description: "Read a file",
			Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`),
		}},
		Strict: true,
	}
}

// startSSE sends the headers of an event stream.
func startSSE(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
}

// send writes one event (name may be empty) and flushes it to the client.
func send(w http.ResponseWriter, name, data string) {
	if name != "" {
		fmt.Fprintf(w, "event: %s\n", name)
	}
	fmt.Fprintf(w, "data: %s\n\n", data)
	w.(http.Flusher).Flush()
}

// cut drops the connection in the middle of the response, without the final chunk.
func cut() { panic(http.ErrAbortHandler) }

// hangUp closes the connection before a single byte of the response.
func hangUp(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	conn.Close()
}

// status answers with an error status, extra headers and a body.
func status(code int, contentType, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// mustJSON encodes v.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// failCase is one failure a gateway returns and what Classify must make of it.
type failCase struct {
	name    string
	handler http.HandlerFunc
	class   string
	handle  Handling
	deltas  int
	after   time.Duration
}

// runFailures drives the real client against each failing gateway.
func runFailures(t *testing.T, provider string, cases []failCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGW(t, provider, tc.handler)
			_, deltas, err := stream(t, g.client(t), testRequest())
			if err == nil {
				t.Fatal("Stream succeeded, want a failure")
			}
			d := Classify(err, len(deltas))
			if d.Class != tc.class || d.Handling != tc.handle {
				t.Errorf("Classify(%v, %d) = %s/%s (%q), want %s/%s", err, len(deltas), d.Class, d.Handling, d.Message, tc.class, tc.handle)
			}
			if len(deltas) != tc.deltas {
				t.Errorf("deltas = %q, want %d of them", deltas, tc.deltas)
			}
			if d.RetryAfter != tc.after {
				t.Errorf("RetryAfter = %v, want %v", d.RetryAfter, tc.after)
			}
			if n := g.requests.Load(); n != 1 {
				t.Errorf("gateway saw %d requests, want exactly 1 (SDK retries must be off)", n)
			}
		})
	}
}

// runCancel checks that cancelling the context mid-stream stops the read and closes the
// connection, and that the error classifies as cancelled.
func runCancel(t *testing.T, provider string, begin func(w http.ResponseWriter)) {
	closed := make(chan struct{})
	g := newGW(t, provider, func(w http.ResponseWriter, r *http.Request) {
		begin(w)
		select {
		case <-r.Context().Done():
			close(closed)
		case <-time.After(10 * time.Second):
		}
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	deltas := 0
	_, err := g.client(t).Stream(ctx, testRequest(), func(string) { deltas++; cancel() })
	if err == nil {
		t.Fatal("Stream succeeded after cancel, want an error")
	}
	if d := Classify(err, deltas); d.Class != contract.ClassCancelled || d.Handling != Stop {
		t.Errorf("Classify(%v) = %s/%s, want cancelled/stop", err, d.Class, d.Handling)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the gateway never saw the connection close")
	}
}

// TestEnvironmentIgnored checks that provider environment variables cannot redirect requests or
// add headers: everything comes from Config.
func TestEnvironmentIgnored(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-From-Env: leaked")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-From-Env: leaked")
	t.Setenv("ANTHROPIC_API_KEY", "env-key")
	handlers := map[string]http.HandlerFunc{
		ProviderOpenAI:          oaStream(oaText("ok"), oaFinish("stop"), "[DONE]"),
		ProviderOpenAIResponses: rsStream(rsOK("ok")...),
		ProviderAnthropic:       antStream(antStart(1), antTextStart(0), antText(0, "ok"), antBlockStop(0), antDelta("end_turn", 1), antStop()),
	}
	for provider, h := range handlers {
		t.Run(provider, func(t *testing.T) {
			g := newGW(t, provider, h)
			if _, _, err := stream(t, g.client(t), testRequest()); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if got := g.header.Get("X-From-Env"); got != "" {
				t.Errorf("header from the environment was sent: %q", got)
			}
			if got := g.header.Get("Authorization"); got != "Bearer test-key" {
				t.Errorf("Authorization = %q, want the configured key", got)
			}
		})
	}
}

// TestStreamReturnsAtTerminator checks that Stream returns once the terminator arrives, even if
// the gateway holds the connection open afterwards.
func TestStreamReturnsAtTerminator(t *testing.T) {
	lingering := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			h(w, r)
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}
	}
	handlers := map[string]http.HandlerFunc{
		ProviderOpenAI:          oaStream(oaText("ok"), oaFinish("stop"), "[DONE]"),
		ProviderOpenAIResponses: rsStream(rsOK("ok")...),
		ProviderAnthropic:       antStream(antStart(1), antTextStart(0), antText(0, "ok"), antBlockStop(0), antDelta("end_turn", 1), antStop()),
	}
	for provider, h := range handlers {
		t.Run(provider, func(t *testing.T) {
			g := newGW(t, provider, lingering(h))
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			defer cancel()
			res, err := g.client(t).Stream(ctx, testRequest(), nil)
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if res.Message.Content != "ok" {
				t.Errorf("content = %q, want ok", res.Message.Content)
			}
		})
	}
}
