package fakegw

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// expect is what one attempt of the first model call must look like.
type expect struct {
	kind       string // hangup, http, cut, malformed, stream
	status     int
	retryAfter string
	// errType and errCode are checked against the provider-shaped error body.
	errType, errCode string
	refusal          bool
	// partial means text must have arrived before the cut.
	partial bool
}

var (
	ok            = expect{kind: "stream", status: 200}
	rateLimited   = expect{kind: "http", status: 429, retryAfter: "1"}
	hungUp        = expect{kind: "hangup"}
	cutEmpty      = expect{kind: "cut", status: 200}
	cutWithText   = expect{kind: "cut", status: 200, partial: true}
	malformed     = expect{kind: "malformed", status: 200}
	refused       = expect{kind: "stream", status: 200, refusal: true}
	unprocessable = expect{kind: "http", status: 422}
)

func times(e expect, n int) []expect {
	out := make([]expect, n)
	for i := range out {
		out[i] = e
	}
	return out
}

func TestFaultsHitTheRightAttempts(t *testing.T) {
	cases := []struct {
		mode string
		// attempts lists attempts 1..n per wire; the same list for both when anthropic is nil.
		openai, anthropic []expect
	}{
		{mode: ModeRateLimit, openai: []expect{rateLimited, ok, ok}},
		{mode: ModeThrottleForever, openai: times(rateLimited, 4)},
		{mode: ModeNetwork, openai: []expect{hungUp, hungUp, hungUp, ok, ok}},
		{mode: ModeServerError, openai: []expect{{kind: "http", status: 503}, {kind: "http", status: 503}, ok, ok}},
		{
			mode:      ModeOverloaded,
			openai:    []expect{{kind: "http", status: 529, retryAfter: "1", errType: "overloaded_error"}, ok, ok},
			anthropic: []expect{{kind: "http", status: 529, retryAfter: "1", errType: "overloaded_error"}, ok, ok},
		},
		{mode: ModeTruncatedStart, openai: []expect{cutEmpty, ok, ok}},
		{mode: ModeTruncated, openai: times(cutWithText, 3)},
		{mode: ModeSchema, openai: times(malformed, 3)},
		{mode: ModeRefusal, openai: times(refused, 2)},
		{
			mode:      ModeBudget,
			openai:    times(expect{kind: "http", status: 429, errType: "insufficient_quota", errCode: "insufficient_quota"}, 2),
			anthropic: times(expect{kind: "http", status: 400, errType: "billing_error"}, 2),
		},
		{mode: ModeUnknown, openai: times(unprocessable, 2)},
		{mode: "", openai: times(ok, 2)},
	}
	for _, tc := range cases {
		for _, w := range wires {
			want := tc.openai
			if w.name == "anthropic" && tc.anthropic != nil {
				want = tc.anthropic
			}
			t.Run(fmt.Sprintf("%s/%s", tc.mode, w.name), func(t *testing.T) {
				gw := New(Options{})
				srv := gw.testServer(t)
				first := w.body("", []message{{Role: "user", Text: "Fix the tests."}})
				for i, e := range want {
					checkOutcome(t, w.name, i+1, w.call(t, srv, tc.mode, first), e)
				}
				recs := gw.Stats().ForMode(tc.mode)
				if len(recs) != len(want) {
					t.Fatalf("%d records, want %d", len(recs), len(want))
				}
				for i, r := range recs {
					if r.Attempt != i+1 || !r.First || r.Format != w.name {
						t.Errorf("record %d: %+v", i+1, r)
					}
				}
				// A later call of the same conversation is never faulted.
				later := w.body("", []message{{Role: "user", Text: "Fix the tests."},
					{Role: "assistant", Text: "Looking.", Calls: []call{{ID: "c1", Name: "list_dir", Args: `{"path":"."}`}}},
					{Role: "tool", CallID: "c1", Text: "calc.go"}})
				checkOutcome(t, w.name, 1, w.call(t, srv, tc.mode, later), ok)
			})
		}
	}
}

func checkOutcome(t *testing.T, wireName string, attempt int, got outcome, e expect) {
	t.Helper()
	if got.Kind != e.kind || (e.status != 0 && got.Status != e.status) {
		t.Fatalf("attempt %d: %s %d (%s), want %s %d", attempt, got.Kind, got.Status, got.Body, e.kind, e.status)
	}
	if got.RetryAfter != e.retryAfter {
		t.Errorf("attempt %d: Retry-After %q, want %q", attempt, got.RetryAfter, e.retryAfter)
	}
	if e.kind == "http" && e.status != 422 {
		checkErrorBody(t, wireName, attempt, got.Body, e)
	}
	if e.kind == "cut" {
		if e.partial && (got.Stream.Deltas < 2 || got.Stream.Text == "") {
			t.Errorf("attempt %d: cut after %d deltas (%q), want a few", attempt, got.Stream.Deltas, got.Stream.Text)
		}
		if !e.partial && got.Stream.Deltas != 0 {
			t.Errorf("attempt %d: cut stream carried %d deltas, want none", attempt, got.Stream.Deltas)
		}
	}
	if e.kind == "stream" {
		refusalStop := map[string]string{"openai": "content_filter", "anthropic": "refusal", FormatResponses: "refusal"}[wireName]
		if e.refusal != (got.Stream.Stop == refusalStop) {
			t.Errorf("attempt %d: stop %q, refusal expected: %v", attempt, got.Stream.Stop, e.refusal)
		}
		if e.refusal && wireName != "anthropic" && got.Stream.Refusal == "" {
			t.Errorf("attempt %d: no refusal text", attempt)
		}
		if e.refusal && len(got.Stream.Calls) > 0 {
			t.Errorf("attempt %d: a refusal carried tool calls", attempt)
		}
	}
}

// checkErrorBody checks the provider's error shape: {"error":{"message","type","code"}} for
// OpenAI, {"type":"error","error":{"type","message"}} for Anthropic.
func checkErrorBody(t *testing.T, wireName string, attempt int, body string, e expect) {
	t.Helper()
	var b struct {
		Type  string `json:"type"`
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &b); err != nil || b.Error.Message == "" || b.Error.Type == "" {
		t.Fatalf("attempt %d: error body %q is not provider-shaped: %v", attempt, body, err)
	}
	if wireName == "anthropic" && b.Type != "error" {
		t.Errorf("attempt %d: anthropic error body type %q, want error", attempt, b.Type)
	}
	if e.errType != "" && b.Error.Type != e.errType {
		t.Errorf("attempt %d: error type %q, want %q", attempt, b.Error.Type, e.errType)
	}
	if e.errCode != "" && (b.Error.Code == nil || *b.Error.Code != e.errCode) {
		t.Errorf("attempt %d: error code %v, want %q", attempt, b.Error.Code, e.errCode)
	}
}

func TestTruncatedRecordsThePartialText(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			gw := New(Options{})
			o := w.call(t, gw.testServer(t), ModeTruncated, w.body("", []message{{Role: "user", Text: "Fix it."}}))
			// The client sees the cut before the handler has finished recording it.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			st, _ := gw.WaitStats(ctx, func(s Stats) bool { return s.LastPartial != "" })
			if o.Stream.Text == "" || st.LastPartial != o.Stream.Text || st.Records[0].Partial != o.Stream.Text {
				t.Fatalf("client saw %q, stats kept %q / %q", o.Stream.Text, st.LastPartial, st.Records[0].Partial)
			}
			if !strings.HasPrefix(demoScript[0].Text, o.Stream.Text) || o.Stream.Text == demoScript[0].Text {
				t.Errorf("partial text %q is not a proper prefix of the first reply", o.Stream.Text)
			}
		})
	}
}

func TestStrictInstructionIsRecorded(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			gw := New(Options{})
			srv := gw.testServer(t)
			plain := w.body("You fix Go code.", []message{{Role: "user", Text: "Fix it."}})
			strict := w.body("You fix Go code.\n\n"+contract.StrictInstruction, []message{{Role: "user", Text: "Fix it."}})
			inUser := w.body("", []message{{Role: "user", Text: "Fix it."}, {Role: "user", Text: contract.StrictInstruction}})
			for _, b := range [][]byte{plain, strict, inUser} {
				w.call(t, srv, ModeSchema, b)
			}
			st := gw.Stats()
			got := []bool{st.Records[0].Strict, st.Records[1].Strict, st.Records[2].Strict}
			if fmt.Sprint(got) != "[false true true]" || st.StrictRequests != 2 {
				t.Fatalf("strict flags %v, count %d", got, st.StrictRequests)
			}
		})
	}
}

func TestSlowStreamNoticesDisconnect(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			gw := New(Options{SlowStreamInterval: 20 * time.Millisecond})
			srv := gw.testServer(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			reqCtx, stop := context.WithCancel(ctx)
			defer stop()
			resp := postStream(t, reqCtx, srv.URL+w.path, ModeSlowStream, w.body("", []message{{Role: "user", Text: "Fix it."}}))
			defer resp.Body.Close()
			events := readEvents(t, resp, 5)
			stop() // the user pressed Esc
			st, err := gw.WaitStats(ctx, func(s Stats) bool { return s.Disconnects == 1 })
			if err != nil {
				t.Fatalf("no disconnect recorded: %v (stats %+v)", err, st)
			}
			rec := st.Records[0]
			if !rec.Disconnected || rec.Partial == "" || !strings.HasPrefix(slowText+" "+slowText, rec.Partial) {
				t.Errorf("record %+v", rec)
			}
			if len(events) != 5 {
				t.Errorf("read %d events before cancelling", len(events))
			}
		})
	}
}

func TestSlowStreamCompletesSlowly(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			const every, total = 10 * time.Millisecond, 100 * time.Millisecond
			gw := New(Options{SlowStreamInterval: every, SlowStreamDuration: total})
			start := time.Now()
			o := w.call(t, gw.testServer(t), ModeSlowStream, w.body("", []message{{Role: "user", Text: "Fix it."}}))
			if took := time.Since(start); took < total {
				t.Errorf("slow stream took %v, want at least %v", took, total)
			}
			if o.Kind != "stream" || o.Stream.Deltas < int(total/every) || len(o.Stream.Calls) != 1 || o.Stream.Calls[0].Name != "list_dir" {
				t.Fatalf("slow stream: %+v", o)
			}
			if gw.Stats().Disconnects != 0 {
				t.Errorf("a completed stream counted as a disconnect")
			}
		})
	}
}

func TestAttemptsAreCountedPerModeAndBody(t *testing.T) {
	gw := New(Options{})
	srv := gw.testServer(t)
	w := wires[0]
	a := w.body("", []message{{Role: "user", Text: "Fix it."}})
	b := w.body("", []message{{Role: "user", Text: "Fix it, please."}})
	steps := []struct {
		mode string
		body []byte
		want expect
	}{
		{ModeRateLimit, a, rateLimited},
		{ModeRateLimit, b, rateLimited}, // another conversation starts at attempt 1
		{ModeServerError, a, expect{kind: "http", status: 503}},
		{ModeRateLimit, a, ok},
	}
	for i, s := range steps {
		checkOutcome(t, w.name, i+1, w.call(t, srv, s.mode, s.body), s.want)
	}
	if got := gw.Stats().ByMode[ModeRateLimit]; got != 3 {
		t.Errorf("ByMode[rate_limit] = %d, want 3", got)
	}
}
