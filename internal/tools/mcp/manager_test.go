package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/flakymcp/flaky"
)

// transports runs the same checks over stdio (the built command) and streamable HTTP.
func transports(t *testing.T) []ServerConfig {
	t.Helper()
	bin := buildFlaky(t)
	url, _ := serveFlaky(t)
	return []ServerConfig{
		{Name: "flaky", Command: []string{bin}, Env: []string{"FLAKY_TEST=1"}},
		{Name: "flaky", URL: url},
	}
}

func transportName(cfg ServerConfig) string {
	if cfg.URL != "" {
		return "http"
	}
	return "stdio"
}

func TestManagerAgainstFlakyServer(t *testing.T) {
	for _, cfg := range transports(t) {
		t.Run(transportName(cfg), func(t *testing.T) {
			ctx := testCtx(t)
			m := newManager(t, cfg)

			specs, err := m.Tools(ctx)
			if err != nil {
				t.Fatalf("listing tools: %v", err)
			}
			assertFlakySpecs(t, specs, "flaky", "")

			t.Run("echo works", func(t *testing.T) {
				res := m.Call(ctx, "flaky", flaky.EchoTool, `{"text":"hello there"}`)
				if res.IsError || res.Content != "hello there" || res.Changed {
					t.Fatalf("echo: %+v", res)
				}
			})
			t.Run("flaky_lookup fails with feedback", func(t *testing.T) {
				for _, q := range []string{"a", "b"} {
					res := m.Call(ctx, "flaky", flaky.LookupTool, `{"query":"`+q+`"}`)
					assertFeedback(t, res, flaky.Unavailable, "nothing changed", "flaky_lookup")
				}
			})
			t.Run("unknown tool is refused", func(t *testing.T) {
				res := m.Call(ctx, "flaky", "no_such_tool", `{}`)
				assertFeedback(t, res, "not run", "nothing changed")
			})
			t.Run("arguments that are not an object are not sent", func(t *testing.T) {
				res := m.Call(ctx, "flaky", flaky.EchoTool, `["x"]`)
				assertFeedback(t, res, "not run", "JSON object")
			})
			t.Run("arguments the schema rejects come back as feedback", func(t *testing.T) {
				res := m.Call(ctx, "flaky", flaky.EchoTool, `{"text":5}`)
				assertFeedback(t, res)
			})
			t.Run("unknown server", func(t *testing.T) {
				res := m.Call(ctx, "nope", flaky.EchoTool, `{}`)
				assertFeedback(t, res, `"nope"`, "not run")
			})
			t.Run("the connection is reused", func(t *testing.T) {
				before := m.servers[0].live()
				if before == nil {
					t.Fatal("no open session after calls")
				}
				if res := m.Call(ctx, "flaky", flaky.EchoTool, `{"text":"again"}`); res.IsError {
					t.Fatalf("echo: %+v", res)
				}
				if after := m.servers[0].live(); after != before {
					t.Fatal("a second call opened a new session")
				}
			})
			t.Run("cancellation stops the call", func(t *testing.T) {
				cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
				start := time.Now()
				res := m.Call(cctx, "flaky", flaky.WaitTool, `{"seconds":60}`)
				if took := time.Since(start); took > 10*time.Second {
					t.Fatalf("the cancelled call took %v", took)
				}
				assertFeedback(t, res, "cancelled", "outcome is unknown", "nothing changed")
				if res := m.Call(ctx, "flaky", flaky.EchoTool, `{"text":"still here"}`); res.IsError || res.Content != "still here" {
					t.Fatalf("echo after a cancelled call: %+v", res)
				}
			})
		})
	}
}

// assertFlakySpecs checks the listed tools of one flaky server, exposed with prefix.
func assertFlakySpecs(t *testing.T, specs []contract.ToolSpec, server, prefix string) {
	t.Helper()
	want := []string{prefix + flaky.EchoTool, prefix + flaky.LookupTool, prefix + flaky.WaitTool}
	var got []string
	for _, s := range specs {
		if s.Server != server {
			continue
		}
		got = append(got, s.Name)
		if s.Writes {
			t.Errorf("%s is read-only but marked as writing", s.Name)
		}
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(s.Parameters, &schema); err != nil || schema.Type != "object" {
			t.Errorf("%s: parameters %s are not an object schema (%v)", s.Name, s.Parameters, err)
		}
		if s.Name == prefix+flaky.LookupTool && schema.Properties["query"] == nil {
			t.Errorf("flaky_lookup schema lacks query: %s", s.Parameters)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("tools of %s: got %v, want %v", server, got, want)
	}
}

func TestServerDown(t *testing.T) {
	bin := buildFlaky(t)
	cases := []struct {
		name string
		cfg  ServerConfig
	}{
		{"no such program", ServerConfig{Name: "down", Command: []string{"keel-no-such-mcp-server"}}},
		{"program exits at once", ServerConfig{Name: "down", Command: []string{bin, "--http", "not-an-address"}}},
		{"nothing listens on the URL", ServerConfig{Name: "down", URL: deadURL(t)}},
		{"neither command nor URL", ServerConfig{Name: "down"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			m := newManager(t, tc.cfg)
			specs, err := m.Tools(ctx)
			if err == nil || len(specs) != 0 {
				t.Fatalf("Tools: specs %v, err %v; want none and an error", specs, err)
			}
			if !strings.Contains(err.Error(), "down") {
				t.Errorf("the error %q does not name the server", err)
			}
			res := m.Call(ctx, "down", "anything", `{"query":"x"}`)
			assertFeedback(t, res, "could not be reached", "not run", "nothing changed")
		})
	}
}

func TestServerGoesAwayAfterConnecting(t *testing.T) {
	ctx := testCtx(t)
	counts := &flaky.Counts{}
	srv := newHTTPServer(t, flaky.Handler(flaky.NewServer(counts)))
	m := newManager(t, ServerConfig{Name: "flaky", URL: srv.URL})
	if res := m.Call(ctx, "flaky", flaky.EchoTool, `{"text":"hi"}`); res.IsError {
		t.Fatalf("echo: %+v", res)
	}
	srv.Close()
	res := m.Call(ctx, "flaky", flaky.EchoTool, `{"text":"hi"}`)
	assertFeedback(t, res, "could not be reached", "nothing changed")
	if m.servers[0].live() != nil {
		t.Fatal("the failed session was kept")
	}
}

func TestOneDownServerLeavesTheOthers(t *testing.T) {
	ctx := testCtx(t)
	url, _ := serveFlaky(t)
	m := newManager(t,
		ServerConfig{Name: "down", URL: deadURL(t)},
		ServerConfig{Name: "flaky", URL: url},
	)
	specs, err := m.Tools(ctx)
	if err == nil || !strings.Contains(err.Error(), "down") {
		t.Fatalf("want an error naming the down server, got %v", err)
	}
	assertFlakySpecs(t, specs, "flaky", "")
}

func TestClashingNamesArePrefixed(t *testing.T) {
	ctx := testCtx(t)
	urlA, countsA := serveFlaky(t)
	urlB, countsB := serveFlaky(t)
	m := newManager(t, ServerConfig{Name: "a", URL: urlA}, ServerConfig{Name: "b.srv", URL: urlB})
	specs, err := m.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	assertFlakySpecs(t, specs, "a", "a__")
	assertFlakySpecs(t, specs, "b.srv", "b_srv__")
	res := m.Call(ctx, "b.srv", "b_srv__"+flaky.EchoTool, `{"text":"via b"}`)
	if res.IsError || res.Content != "via b" {
		t.Fatalf("echo on b: %+v", res)
	}
	if countsA.Echoes.Load() != 0 || countsB.Echoes.Load() != 1 {
		t.Fatalf("echo reached a %d times and b %d times, want 0 and 1", countsA.Echoes.Load(), countsB.Echoes.Load())
	}
}

func TestCancellationReachesTheServer(t *testing.T) {
	ctx := testCtx(t)
	url, counts := serveFlaky(t)
	m := newManager(t, ServerConfig{Name: "flaky", URL: url})
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		waitFor(t, "the wait call to start", func() bool { return counts.Waits.Load() == 1 })
		cancel()
	}()
	res := m.Call(cctx, "flaky", flaky.WaitTool, `{"seconds":60}`)
	assertFeedback(t, res, "cancelled")
	waitFor(t, "the server to see the cancellation", func() bool { return counts.Cancelled.Load() == 1 })
}

func TestCallAfterClose(t *testing.T) {
	ctx := testCtx(t)
	url, counts := serveFlaky(t)
	m := NewManager([]ServerConfig{{Name: "flaky", URL: url}})
	if res := m.Call(ctx, "flaky", flaky.EchoTool, `{"text":"x"}`); res.IsError {
		t.Fatalf("echo: %+v", res)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	res := m.Call(ctx, "flaky", flaky.EchoTool, `{"text":"x"}`)
	assertFeedback(t, res, "could not be reached")
	if counts.Echoes.Load() != 1 {
		t.Fatalf("echo reached the server %d times after close, want 1 in all", counts.Echoes.Load())
	}
}

func TestCallBeforeListingFindsAliases(t *testing.T) {
	ctx := testCtx(t)
	urlA, _ := serveFlaky(t)
	urlB, countsB := serveFlaky(t)
	m := newManager(t, ServerConfig{Name: "a", URL: urlA}, ServerConfig{Name: "b", URL: urlB})
	res := m.Call(ctx, "b", "b__"+flaky.LookupTool, `{"query":"x"}`)
	assertFeedback(t, res, flaky.Unavailable, "It only reads, so nothing changed")
	if countsB.Lookups.Load() != 1 {
		t.Fatalf("the lookup reached b %d times, want 1", countsB.Lookups.Load())
	}
}
