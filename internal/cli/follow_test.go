package cli

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/session"
)

// countingClient counts status queries; nothing else of the client is used by live.
type countingClient struct {
	client.Client
	queries int
}

func (c *countingClient) QueryWorkflow(context.Context, string, string, string, ...any) (converter.EncodedValue, error) {
	c.queries++
	return nil, errors.New("no server in this test")
}

// TestFollowerQueriesOnlyWhenTheSinkIsQuiet: a turn whose model call posts the session's status
// costs no query; while a model call or a tool runs, only the backstop is due; once the sink falls
// quiet outside them (the session may wait for a person), a query is due after quietPoll; a turn
// from a worker that posts no status is asked for it.
func TestFollowerQueriesOnlyWhenTheSinkIsQuiet(t *testing.T) {
	status := contract.Event{Event: contract.EventStatus, Turn: 1, Status: &contract.SessionStatus{Status: contract.StatusRunning, Running: 1}}
	model := contract.Event{Event: contract.EventModelCall, Turn: 1, Attempt: 1}
	delta := contract.Event{Event: contract.EventDelta, Turn: 1, Text: "thinking "}
	call := contract.Event{Event: contract.EventToolCall, Turn: 1, Tool: "run_command", CallID: "c1", Arguments: `{"command":"sleep 2"}`}
	output := contract.Event{Event: contract.EventOutput, Turn: 1, CallID: "c1", Text: "x"}
	result := contract.Event{Event: contract.EventToolResult, Turn: 1, Tool: "run_command", CallID: "c1"}
	cases := []struct {
		name    string
		events  []contract.Event
		queries int
		wait    time.Duration
	}{
		{"status, then the model call starts", []contract.Event{status, model}, 0, backstopPoll},
		{"the reply streams", []contract.Event{status, model, delta}, 0, quietPoll},
		{"a tool runs", []contract.Event{status, model, delta, call}, 0, backstopPoll},
		{"a running tool prints", []contract.Event{status, model, delta, call, output}, 0, backstopPoll},
		{"the tool ended", []contract.Event{status, model, delta, call, result}, 0, quietPoll},
		{"no status with the turn", []contract.Event{model}, 1, backstopPoll},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cc := &countingClient{}
			p, err := newPrinter("jsonl", io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			f := &follower{c: session.Client{Temporal: cc}, workflowID: "w", p: p, prog: newProgress(time.Now())}
			for _, e := range c.events {
				f.live(context.Background(), e)
			}
			if cc.queries != c.queries {
				t.Errorf("queries = %d, want %d", cc.queries, c.queries)
			}
			left := time.Until(f.nextPoll)
			if left > c.wait || left < c.wait-time.Second/2 {
				t.Errorf("next query in %s, want about %s", left, c.wait)
			}
		})
	}
}

// TestQueriesBackOffWhileQuiet: each query after silence doubles the wait for the next, up to the
// backstop.
func TestQueriesBackOffWhileQuiet(t *testing.T) {
	p, err := newPrinter("jsonl", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cc := &countingClient{}
	f := &follower{c: session.Client{Temporal: cc}, workflowID: "w", p: p, prog: newProgress(time.Now())}
	f.heard(time.Now(), false)
	var waits []time.Duration
	for range 6 {
		f.pollStatus(context.Background())
		waits = append(waits, time.Until(f.nextPoll).Round(time.Second))
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, backstopPoll, backstopPoll}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits after each quiet query = %v, want %v", waits, want)
		}
	}
}

// TestTokensStreamAsAnEstimate: while a reply streams the status line shows the counted tokens plus
// an estimate of the reply's, marked "~"; the next count replaces the estimate.
func TestTokensStreamAsAnEstimate(t *testing.T) {
	now := time.Now()
	p := newProgress(now)
	p.counted(100)
	if got := p.tokenText(); got != "100 tokens" {
		t.Fatalf("before the reply: %q", got)
	}
	p.observe(contract.Event{Event: contract.EventDelta, Text: "twelve chars"}, now)
	p.observe(contract.Event{Event: contract.EventDelta, Text: "a"}, now)
	if got := p.tokenText(); got != "~104 tokens" {
		t.Fatalf("while the reply streams: %q, want ~104 tokens", got)
	}
	p.counted(130)
	if got := p.tokenText(); got != "130 tokens" {
		t.Fatalf("after the count: %q", got)
	}
}

// TestInFlightCallShownOnce: a call shown on attaching (showStep) is not printed again when the
// live events bring it; its output and result print, and its result settles it.
func TestInFlightCallShownOnce(t *testing.T) {
	call := contract.Event{Event: contract.EventToolCall, Turn: 1, Tool: "run_command", CallID: "c1"}
	cases := []struct {
		name    string
		next    contract.Event
		printed bool
		settled bool
	}{
		{"the call again", call, false, false},
		{"its output", contract.Event{Event: contract.EventOutput, Turn: 1, CallID: "c1", Text: "x"}, true, false},
		{"its result", contract.Event{Event: contract.EventToolResult, Turn: 1, CallID: "c1"}, true, true},
		{"the next call", contract.Event{Event: contract.EventToolCall, Turn: 1, CallID: "c2"}, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			p, err := newPrinter("jsonl", &out)
			if err != nil {
				t.Fatal(err)
			}
			f := &follower{c: session.Client{Temporal: &countingClient{}}, workflowID: "w", p: p, prog: newProgress(time.Now()), turn: 1}
			in := call
			f.inFlight = &in
			f.live(context.Background(), c.next)
			if printed := out.Len() > 0; printed != c.printed || (f.inFlight == nil) != c.settled {
				t.Errorf("printed %v, settled %v; want %v, %v", printed, f.inFlight == nil, c.printed, c.settled)
			}
		})
	}
}
