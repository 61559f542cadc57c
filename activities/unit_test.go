package activities_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/keelrun/keel/activities"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/gateway"
	"github.com/keelrun/keel/internal/jsondur"
	"github.com/keelrun/keel/internal/store"
)

// modelRig is CallModel's world: the fake gateway over HTTP, a file store, and a backoff whose
// random half is fixed at 0.5, so waits are exact. live holds the live events of the last call,
// by position, from its heartbeats, its result and its failure: what a watcher reads.
type modelRig struct {
	gw   *fakegw.Server
	acts *activities.Activities
	mu   sync.Mutex
	live map[int]contract.Event
}

// take keeps the events of l.
func (r *modelRig) take(l *contract.LiveEvents) {
	if l == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, e := range l.Events {
		r.live[l.From+i] = e
	}
}

func newModelRig(t *testing.T) *modelRig {
	t.Helper()
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Close() })
	p, err := gateway.New(gateway.Config{Provider: gateway.ProviderOpenAI, BaseURL: gw.BaseURL() + "/v1", APIKey: "k", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	models := activities.Solo(p)
	models.Rand = func() float64 { return 0.5 }
	acts := &activities.Activities{Models: models, Store: st}
	return &modelRig{gw: gw, acts: acts}
}

// call runs CallModel once in a test activity environment; heartbeat, when set, is what the
// attempt before this one left in its heartbeat details.
func (r *modelRig) call(t *testing.T, req contract.ModelRequest, heartbeat any) (contract.ModelResponse, error) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(r.acts.CallModel, activity.RegisterOptions{Name: contract.CallModelActivity})
	if heartbeat != nil {
		env.SetHeartbeatDetails(heartbeat)
	}
	r.live = map[int]contract.Event{}
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
		var d contract.LiveDetails
		if details.Get(&d) == nil {
			r.take(d.Live)
		}
	})
	req.Retry = contract.RetryConfig{Base: jsondur.Duration(400 * time.Millisecond), Cap: jsondur.Duration(8 * time.Second)}
	val, err := env.ExecuteActivity(contract.CallModelActivity, req)
	var resp contract.ModelResponse
	if err == nil {
		err = val.Get(&resp)
		r.take(resp.Live)
	}
	var app *temporal.ApplicationError
	var f contract.Failure
	var live contract.LiveDetails
	if errors.As(err, &app) && app.Details(&f, &live) == nil {
		r.take(live.Live)
	}
	return resp, err
}

// until is the last call's live events in order, up to the first that satisfies done; the
// positions must have no hole.
func (r *modelRig) until(t *testing.T, done func(contract.Event) bool) []contract.Event {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var got []contract.Event
	for i := range len(r.live) {
		e, ok := r.live[i]
		if !ok {
			t.Fatalf("no live event at position %d of %d", i, len(r.live))
		}
		got = append(got, e)
		if done(e) {
			return got
		}
	}
	t.Fatalf("the awaited event never came; got %+v", got)
	return nil
}

func task(mode, name string) []contract.Message {
	return []contract.Message{{Role: contract.RoleUser, Content: fakegw.WithMode("fix the failing test ("+name+")", mode)}}
}

// failureOf reads the model failure an attempt returned.
func failureOf(t *testing.T, err error) (*temporal.ApplicationError, contract.Failure) {
	t.Helper()
	var app *temporal.ApplicationError
	if !errors.As(err, &app) {
		t.Fatalf("want a model failure, got %v", err)
	}
	var f contract.Failure
	if err := app.Details(&f); err != nil {
		t.Fatalf("the failure carries no details: %v", err)
	}
	return app, f
}

// TestCallModelRetryWait: a retryable failure hands Temporal Keel's wait (the equal-jitter
// backoff, Retry-After as a floor) and announces it; an unparsable reply goes back to the turn
// with the wait, to be called again strict; strict and out of attempts, it is surfaced.
func TestCallModelRetryWait(t *testing.T) {
	r := newModelRig(t)
	cases := []struct {
		name      string
		mode      string
		strict    bool
		prior     int
		class     string
		retryable bool
		wait      time.Duration // NextRetryDelay, or the turn's wait for a strict retry
		reason    string
	}{
		{name: "server error: 300 ms at attempt 1", mode: fakegw.ModeServerError, class: contract.ClassTransport, retryable: true, wait: 300 * time.Millisecond},
		{name: "server error: 600 ms at attempt 2", mode: fakegw.ModeServerError, prior: 1, class: contract.ClassTransport, retryable: true, wait: 600 * time.Millisecond},
		// Retry-After: 1 is the floor; the random half-window (0.5 × 200 ms) comes on top.
		{name: "rate limit: Retry-After is the floor", mode: fakegw.ModeRateLimit, class: contract.ClassThrottle, retryable: true, wait: 1100 * time.Millisecond},
		{name: "unparsable: back to the turn", mode: fakegw.ModeSchema, class: contract.ClassSchema, wait: 300 * time.Millisecond},
		{name: "unparsable when strict: surfaced", mode: fakegw.ModeSchema, strict: true, prior: 1, class: contract.ClassSchema, reason: "gave up after 2 attempts"},
		{name: "refusal: surfaced", mode: fakegw.ModeRefusal, class: contract.ClassRefusal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := r.call(t, contract.ModelRequest{SessionID: "s", Turn: 1, Append: task(c.mode, c.name), Strict: c.strict, PriorAttempts: c.prior}, nil)
			app, f := failureOf(t, err)
			if f.Class != c.class || app.NonRetryable() == c.retryable {
				t.Fatalf("class %q, retryable %v; want %q, %v (%v)", f.Class, !app.NonRetryable(), c.class, c.retryable, err)
			}
			if c.retryable && app.NextRetryDelay() != c.wait {
				t.Errorf("NextRetryDelay %s, want %s", app.NextRetryDelay(), c.wait)
			}
			if !c.retryable && time.Duration(f.StrictRetryMS)*time.Millisecond != c.wait {
				t.Errorf("the turn is asked to wait %d ms, want %s", f.StrictRetryMS, c.wait)
			}
			if !strings.Contains(f.Reason, c.reason) || f.Attempts != c.prior+1 {
				t.Errorf("reason %q after %d attempts; want it to say %q after %d", f.Reason, f.Attempts, c.reason, c.prior+1)
			}
			if c.wait > 0 {
				evs := r.until(t, func(e contract.Event) bool { return e.Event == contract.EventRetry })
				last := evs[len(evs)-1]
				if last.WaitMS != c.wait.Milliseconds() || last.Attempt != c.prior+2 {
					t.Errorf("retry event %+v; want a wait of %d ms before attempt %d", last, c.wait.Milliseconds(), c.prior+2)
				}
			}
		})
	}
	strict := map[bool]int{}
	for _, rec := range r.gw.Stats().ForMode(fakegw.ModeSchema) {
		strict[rec.Strict]++
	}
	if strict[true] != 1 || strict[false] != 1 {
		t.Errorf("the gateway saw %d strict and %d plain unparsable requests, want one of each", strict[true], strict[false])
	}
}

// TestCallModelAfterAWorkerCrash: an attempt that starts where a dead attempt had shown text
// says so before it streams the reply again; the text is never repeated silently.
func TestCallModelAfterAWorkerCrash(t *testing.T) {
	r := newModelRig(t)
	prev := map[string]any{"attempt": 1, "deltas": 3, "partial": "Let me look"}
	resp, err := r.call(t, contract.ModelRequest{SessionID: "s", Turn: 1, Append: task("", "crash")}, prev)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Message.ToolCalls) == 0 {
		t.Fatalf("the reply has no tool call: %+v", resp.Message)
	}
	evs := r.until(t, func(e contract.Event) bool { return e.Event == contract.EventDelta })
	notice := -1
	for i, e := range evs {
		if e.Event == contract.EventNotice && strings.Contains(e.Text, "at least 3 pieces were shown") {
			notice = i
		}
	}
	if notice < 0 || notice > len(evs)-2 {
		t.Fatalf("no notice before the first delta: %+v", evs)
	}
}

// TestCallModelAlreadyShown: a stream cut after text reached the user is surfaced, never retried,
// and the text shown travels with the failure.
func TestCallModelAlreadyShown(t *testing.T) {
	r := newModelRig(t)
	_, err := r.call(t, contract.ModelRequest{SessionID: "s", Turn: 1, Append: task(fakegw.ModeTruncated, "cut")}, nil)
	app, f := failureOf(t, err)
	if !app.NonRetryable() || f.Class != contract.ClassTruncated || f.Partial == "" {
		t.Fatalf("retryable %v, class %q, partial %q; want a surfaced truncated failure that keeps the text", !app.NonRetryable(), f.Class, f.Partial)
	}
	var shown strings.Builder
	r.until(t, func(e contract.Event) bool {
		if e.Event == contract.EventDelta {
			shown.WriteString(e.Text)
		}
		return shown.String() == f.Partial
	})
}

// TestRunToolOutcomes: a tool's success and its failure are both results (never an activity
// error, so Temporal retries nothing), and only a runner that cannot attempt the call fails the
// activity.
func TestRunToolOutcomes(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "calc.go"), []byte("package calc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := activities.ToolRunnerFunc(func(context.Context, contract.ToolRequest) (contract.ToolResult, error) {
		return contract.ToolResult{}, errors.New("the side-effect log is full")
	})
	cases := []struct {
		name    string
		tools   activities.ToolRunner
		call    contract.ToolCall
		isError bool
		content string
		failed  bool
	}{
		{name: "ok", call: contract.ToolCall{ID: "c1", Name: "read_file", Arguments: `{"path":"calc.go"}`}, content: "package calc"},
		{name: "tool error", call: contract.ToolCall{ID: "c2", Name: "read_file", Arguments: `{"path":"missing.go"}`}, isError: true, content: "missing.go"},
		{name: "runner cannot attempt it", tools: broken, call: contract.ToolCall{ID: "c3", Name: "read_file", Arguments: `{"path":"calc.go"}`}, failed: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			acts := &activities.Activities{Tools: c.tools}
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			env.RegisterActivityWithOptions(acts.RunTool, activity.RegisterOptions{Name: contract.RunToolActivity})
			val, err := env.ExecuteActivity(contract.RunToolActivity, contract.ToolRequest{SessionID: "s", Turn: 1, Call: c.call, ToolSettings: contract.ToolSettings{Workdir: dir}})
			if c.failed {
				if err == nil || !strings.Contains(err.Error(), "side-effect log") {
					t.Fatalf("want the runner's error, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("a tool outcome failed the activity: %v", err)
			}
			var res contract.ToolResult
			if err := val.Get(&res); err != nil {
				t.Fatal(err)
			}
			if res.IsError != c.isError || !strings.Contains(res.Content, c.content) {
				t.Fatalf("result %+v; want is_error %v and content with %q", res, c.isError, c.content)
			}
		})
	}
}
