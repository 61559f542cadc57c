package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/events"
	"github.com/keelrun/keel/internal/gateway"
	"github.com/keelrun/keel/internal/metrics/record"
	"github.com/keelrun/keel/internal/textfmt"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// attemptState travels in heartbeat details, so the next attempt, even on another worker after a
// crash, knows whether this one already showed the user anything.
type attemptState struct {
	Attempt int    `json:"attempt"`
	Deltas  int    `json:"deltas"`
	Partial string `json:"partial,omitempty"`
	// Live is the call's journal window (events.Journal): watchers read it, and the next attempt
	// goes on from it. Details from before it have none.
	Live *contract.LiveEvents `json:"live,omitempty"`
}

// CallModel streams one model reply, publishing deltas as they arrive. On failure it classifies the
// error and either returns a retryable error whose NextRetryDelay is Keel's jittered wait (Temporal
// does the retrying) or a non-retryable one carrying a contract.Failure.
func (a *Activities) CallModel(ctx context.Context, req contract.ModelRequest) (contract.ModelResponse, error) {
	attempt := req.PriorAttempts + int(activity.GetInfo(ctx).Attempt)
	var prev attemptState
	if activity.IsActivity(ctx) && activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &prev)
	}
	j := events.NewJournal(prev.Live)
	ctx, live := a.beginLive(ctx, req.Watched, j, func() any { return attemptState{Attempt: attempt, Live: j.Live()} })
	defer live.end(ctx)
	resp, err := a.callModel(ctx, req, attempt, prev)
	if err != nil {
		return resp, a.withLive(ctx, err)
	}
	resp.Live = j.Live()
	return resp, nil
}

// withLive hands a failed call's live events on: a retried attempt's go into a last heartbeat,
// which the next attempt goes on from; a surfaced or cancelled call's ride in its failure.
func (a *Activities) withLive(ctx context.Context, err error) error {
	l := liveOf(ctx)
	var app *temporal.ApplicationError
	var ce *temporal.CanceledError
	var f contract.Failure
	switch {
	case errors.As(err, &app) && app.NonRetryable() && app.Details(&f) == nil:
		return temporal.NewApplicationErrorWithOptions(f.Reason, contract.ModelErrorType,
			temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{f, contract.LiveDetails{Live: l.j.Live()}}})
	case errors.As(err, &ce) && ce.HasDetails() && ce.Details(&f) == nil:
		return temporal.NewCanceledError(f, contract.LiveDetails{Live: l.j.Live()})
	default:
		l.flush(ctx)
		return err
	}
}

func (a *Activities) callModel(ctx context.Context, req contract.ModelRequest, attempt int, prev attemptState) (contract.ModelResponse, error) {
	if prev.Deltas > 0 {
		// An earlier attempt died with its worker after showing output. A gateway failure in that
		// position is surfaced (the emitted rule), but a worker crash is Keel's own fault and the
		// session must go on: the reply streams again, and the user is told so first, so the
		// repeated text is never shown silently.
		publish(ctx, contract.Event{
			Event: contract.EventNotice, WorkflowID: req.SessionID, Turn: req.Turn, Attempt: attempt,
			Text: restartNotice(prev.Deltas),
		})
	}

	head, err := a.Store.Append(ctx, req.Head, req.Append)
	if err != nil {
		return contract.ModelResponse{}, fmt.Errorf("storing the new transcript messages: %w", err)
	}
	msgs, err := a.Store.Load(ctx, head)
	if err != nil {
		return contract.ModelResponse{}, fmt.Errorf("loading the transcript: %w", err)
	}
	if msgs, err = a.view(ctx, msgs, req.Compaction); err != nil {
		return contract.ModelResponse{}, err
	}

	tools, err := toolspec.Join(req.BuiltinTools, req.Tools)
	if err != nil {
		return contract.ModelResponse{}, surfaced(contract.Failure{Class: contract.ClassUnknown, Reason: err.Error(), Attempts: attempt})
	}
	req.BuiltinTools, req.Tools = "", tools
	chain, err := a.Models.chainFor(req)
	if err != nil {
		activity.GetLogger(ctx).Warn("cannot serve the session's model endpoint", "error", err)
		record.ModelAttempt(activity.GetMetricsHandler(ctx), contract.ClassEndpoint, record.AttemptSurfaced)
		return contract.ModelResponse{}, surfaced(contract.Failure{Class: contract.ClassEndpoint, Reason: err.Error(), Attempts: attempt})
	}
	if req.Status != nil {
		publish(ctx, contract.Event{Event: contract.EventStatus, WorkflowID: req.SessionID, Turn: req.Turn, Status: req.Status})
	}
	publish(ctx, contract.Event{Event: contract.EventModelCall, WorkflowID: req.SessionID, Turn: req.Turn, Attempt: attempt})
	resp, i, err := a.callChain(ctx, chain, modelCall{req: req, attempt: attempt, shown: true, send: gateway.Request{
		Model: req.Model, Messages: msgs, Tools: req.Tools, Strict: req.Strict, CacheKey: req.SessionID,
	}})
	if err != nil {
		return contract.ModelResponse{}, err
	}
	newHead, err := a.Store.Append(ctx, head, []contract.Message{resp.Message})
	if err != nil {
		return contract.ModelResponse{}, fmt.Errorf("storing the model's reply: %w", err)
	}
	// The reasoning items stay in the store, where the next call reads them; the workflow never
	// does, and its history need not carry their encrypted content.
	reply := resp.Message
	reply.Reasoning = nil
	model := chain.Route(i).Label(req.Model)
	if a.Models.scripted() {
		// The dev stack's script answered, whatever model name the call carried: attempts says so.
		model = ScriptedLabel + model
	}
	return contract.ModelResponse{
		Head: newHead, Message: reply, Usage: resp.Usage, Attempt: attempt,
		Model: model, Fallback: i > 0,
	}, nil
}

// ScriptedLabel starts the model a reply names when a dev stack's scripted fake gateway answered
// it (the rest is the model name the call carried).
const ScriptedLabel = "scripted fake, as "

// modelCall is one model call as callChain runs it on every route it tries.
type modelCall struct {
	// req is the request failures are reported against: its session, turn and retry.
	req     contract.ModelRequest
	attempt int
	// send is what each route is sent, with the route's own model when it names one.
	send gateway.Request
	// shown says the reply's text is published to the user as it streams, which brings in the
	// emitted rule: an attempt that showed something is surfaced when it fails, never retried.
	shown bool
}

// callChain runs a model call on chain: an attempt on the first open route, then on the next
// one while a route is down and nothing was shown (fallBack). It returns the reply and the route
// that gave it, or the error Temporal acts on (modelError).
func (a *Activities) callChain(ctx context.Context, chain *gateway.Chain, c modelCall) (gateway.Response, int, error) {
	i := chain.Start()
	for {
		stream := &streamState{attempt: c.attempt, live: liveOf(ctx)}
		resp, err := a.stream(ctx, c, chain.Route(i), stream)
		if err == nil {
			chain.Succeeded(i)
			mh := activity.GetMetricsHandler(ctx)
			record.ModelAttempt(mh, "", record.AttemptOK)
			record.TokensUsed(mh, resp.Usage.InputTokens, resp.Usage.OutputTokens)
			return resp, i, nil
		}
		if next, ok := a.fallBack(ctx, c.req, chain, i, stream, err); ok {
			i = next
			continue
		}
		return gateway.Response{}, i, a.modelError(ctx, c.req, chain.Route(i), stream, err)
	}
}

// stream runs one attempt on one route, heartbeating and, for a call whose text is shown,
// publishing every delta.
func (a *Activities) stream(ctx context.Context, c modelCall, route gateway.Route, stream *streamState) (gateway.Response, error) {
	send := c.send
	if route.Model != "" {
		send.Model = route.Model
	}
	if stream.live != nil && c.shown {
		stream.live.setBeat(stream.details)
	}
	stop := a.keepBeating(ctx, stream.details)
	defer stop()
	return route.Provider.Stream(ctx, send, func(text string) {
		if !c.shown {
			return
		}
		n := stream.add(text)
		publish(ctx, contract.Event{Event: contract.EventDelta, WorkflowID: c.req.SessionID, Turn: c.req.Turn, Text: text, Seq: n})
		if n == 1 {
			// The emitted rule's heartbeat: sent at once, so an attempt after a crash knows text
			// was shown. Later details ride on the liveness heartbeats (keepBeating). The SDK
			// sends an activity's first heartbeat in the caller, a round trip to the server, so
			// it goes from a goroutine of its own and the stream reads on: text reaches a person
			// only in a heartbeat or the result, so the server knows of what was shown as soon
			// as anyone can see it, and a watcher gets the first piece with this heartbeat.
			details := stream.details()
			go activity.RecordHeartbeat(ctx, details)
		}
	})
}

// fallBack decides whether a failed attempt on route i goes to the next route at once: the route
// is down (gateway.FallsBack), nothing was shown, and there is a next route. It opens route i's
// breaker, so later calls start past it, and tells the user which model takes over.
func (a *Activities) fallBack(ctx context.Context, req contract.ModelRequest, chain *gateway.Chain, i int, stream *streamState, err error) (int, bool) {
	deltas, _ := stream.snapshot()
	d := gateway.Classify(err, deltas)
	d.Message = reword(chain.Route(i), d.Message)
	if i+1 >= chain.Len() || deltas > 0 || ctx.Err() != nil || !gateway.FallsBack(d, stream.attempt) {
		return i, false
	}
	chain.Failed(i)
	from, to := chain.Route(i).Label(req.Model), chain.Route(i+1).Label(req.Model)
	record.ModelAttempt(activity.GetMetricsHandler(ctx), d.Class, record.AttemptFallback)
	activity.GetLogger(ctx).Warn("model route down, falling back", "from", from, "to", to, "class", d.Class, "reason", d.Message)
	publish(ctx, contract.Event{
		Event: contract.EventNotice, WorkflowID: req.SessionID, Turn: req.Turn, Attempt: stream.attempt, Class: d.Class,
		Text: fmt.Sprintf("%s is down (%s); this call goes to %s", from, d.Message, to),
	})
	return i + 1, true
}

// restartNotice tells the user a reply streams again. The count is what the last heartbeat
// carried: the first piece is reported at once (the emitted rule), later ones only with the
// liveness heartbeats, so more may have been shown, and the notice says "at least".
func restartNotice(deltas int) string {
	pieces := "pieces were"
	if deltas == 1 {
		pieces = "piece was"
	}
	return fmt.Sprintf("a worker stopped while this reply was streaming (at least %d %s shown); the reply starts again from the beginning", deltas, pieces)
}

// modelError turns a failed attempt into the error Temporal acts on.
func (a *Activities) modelError(ctx context.Context, req contract.ModelRequest, route gateway.Route, stream *streamState, err error) error {
	deltas, partial := stream.snapshot()
	d := gateway.Classify(err, deltas)
	d.Message = reword(route, d.Message)
	mh := activity.GetMetricsHandler(ctx)
	if d.Handling == gateway.Stop || ctx.Err() != nil {
		record.ModelAttempt(mh, contract.ClassCancelled, record.AttemptCancelled)
		// What was shown before the cancel travels with the cancellation, so it is kept.
		return temporal.NewCanceledError(contract.Failure{Class: contract.ClassCancelled, Reason: "cancelled", Attempts: stream.attempt, Partial: partial})
	}
	attempt := stream.attempt
	if f, ok := usageLimit(req, d, attempt, time.Now()); ok {
		record.ModelAttempt(mh, f.Class, record.AttemptSurfaced)
		activity.GetLogger(ctx).Info("model call hit a usage limit; the session waits for its reset", "reset", f.ResetAt, "attempt", attempt)
		return surfaced(f)
	}
	if d.Handling == gateway.Retry && attempt < gateway.AttemptCap(d.Class) {
		b := gateway.Backoff{Base: req.Retry.Base.Std(), Cap: req.Retry.Cap.Std(), Rand: a.Models.Rand}
		wait := b.Wait(attempt, d.RetryAfter)
		record.ModelAttempt(mh, d.Class, record.AttemptRetry)
		record.ModelRetry(mh, d.Class, wait)
		line := fmt.Sprintf("%s; waiting %s before attempt %d", d.Message, textfmt.Duration(wait), attempt+1)
		activity.GetLogger(ctx).Info("model call will be retried", "class", d.Class, "wait", wait, "attempt", attempt)
		publish(ctx, contract.Event{
			Event: contract.EventRetry, WorkflowID: req.SessionID, Turn: req.Turn, Text: line,
			Attempt: attempt + 1, Class: d.Class, WaitMS: wait.Milliseconds(),
		})
		if d.Class == contract.ClassSchema && !req.Strict {
			// The turn calls again with the strict instruction in the request: a flag kept in this
			// worker's memory would be lost when the retry lands on another worker.
			return surfaced(contract.Failure{Class: d.Class, Reason: d.Message, Attempts: attempt, StrictRetryMS: max(wait.Milliseconds(), 1)})
		}
		return temporal.NewApplicationErrorWithOptions(fmt.Sprintf("attempt %d failed: %s", attempt, line), contract.ModelErrorType,
			temporal.ApplicationErrorOptions{NextRetryDelay: max(wait, time.Millisecond), Details: []any{contract.Failure{Class: d.Class, Reason: d.Message, Attempts: attempt}}})
	}
	record.ModelAttempt(mh, d.Class, record.AttemptSurfaced)
	reason := d.Message
	if d.Handling == gateway.Retry {
		reason = fmt.Sprintf("%s; gave up after %d attempts", d.Message, attempt)
	}
	return surfaced(contract.Failure{Class: d.Class, Reason: reason, Attempts: attempt, Partial: partial})
}

// usageLimit turns a throttle whose server-asked wait lies beyond the retry cap into a usage
// limit the session waits out on a durable timer, when the session asked for that
// (ModelSettings.WaitLimits): an activity retry hours out would show nobody why or until when,
// and would sit out a reset that lies after the session's deadline.
func usageLimit(req contract.ModelRequest, d gateway.Diagnosis, attempt int, now time.Time) (contract.Failure, bool) {
	limit := req.Retry.Cap.Std()
	if limit <= 0 {
		limit = contract.DefaultRetryCap
	}
	if !req.WaitLimits || d.Class != contract.ClassThrottle || d.Handling != gateway.Retry || d.RetryAfter <= limit {
		return contract.Failure{}, false
	}
	at := now.Add(d.RetryAfter).UTC().Truncate(time.Second)
	return contract.Failure{
		Class: contract.ClassUsageLimit, Attempts: attempt, ResetAt: at,
		Reason: fmt.Sprintf("%s: the limit resets at %s", d.Message, at.Format(time.RFC3339)),
	}, true
}

// surfaced is the non-retryable error of a failure a person must see.
func surfaced(f contract.Failure) error {
	return temporal.NewApplicationErrorWithOptions(f.Reason, contract.ModelErrorType,
		temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{f}})
}

// streamState counts what one attempt has shown the user.
type streamState struct {
	// live is the call's liveCall, whose journal window the details carry; nil for a call whose
	// text is not shown (a compaction's).
	live    *liveCall
	mu      sync.Mutex
	attempt int
	deltas  int
	partial strings.Builder
}

func (s *streamState) add(text string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deltas++
	s.partial.WriteString(text)
	return s.deltas
}

func (s *streamState) snapshot() (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deltas, s.partial.String()
}

// maxPartialInDetails bounds the partial text kept in heartbeat details.
const maxPartialInDetails = 8 << 10

func (s *streamState) details() any {
	n, p := s.snapshot()
	if len(p) > maxPartialInDetails {
		p = p[len(p)-maxPartialInDetails:]
	}
	st := attemptState{Attempt: s.attempt, Deltas: n, Partial: p}
	if s.live != nil {
		st.Live = s.live.j.Live()
	}
	return st
}
