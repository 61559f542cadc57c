package events

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/keelrun/keel/internal/codec"
	"github.com/keelrun/keel/internal/contract"
)

// The publisher's bounds. A session never waits on a watcher: Publish only queues, one sender per
// sink posts, and what does not fit is dropped. The numbers keep a stopped or unreachable watcher
// cheap for the worker (a queue of at most queueEvents or queueBytes per sink, one request in
// flight) and let a healthy one get everything: a streamed reply of thousands of pieces fits in
// a few dozen batches.
const (
	// queueEvents and queueBytes bound what waits for one sink; beyond either, events are dropped.
	queueEvents = 1024
	queueBytes  = 1 << 20
	// batchEvents bounds the events of one POST.
	batchEvents = 128
	// postTimeout bounds one POST, dialTimeout its connection: an address that drops SYNs costs
	// the sender one dialTimeout, never the session.
	postTimeout = 3 * time.Second
	dialTimeout = time.Second
	// retryFirst and retryCap shape the back-off after a failed POST: the wait doubles from
	// retryFirst up to retryCap, so a watcher that is gone is tried about twice a minute, not per
	// event; the failed batch is dropped, not tried again.
	retryFirst = 200 * time.Millisecond
	retryCap   = 30 * time.Second
	// stallAfter is how long a POST may be in flight before its sink counts as stalled: Flush
	// waits for a healthy sink only. It is the bound one POST had when posting was synchronous,
	// so a watcher on a busy machine that answered then still has every event of a call before
	// the workflow moves on.
	stallAfter = 500 * time.Millisecond
	// flushBound bounds Flush as a whole.
	flushBound = 2 * time.Second
	// idleAfter is how long a sink's sender waits for events before it ends; a later event
	// starts a new one.
	idleAfter = time.Minute
	// warnedMax bounds the session and sink pairs whose drops were logged, for a worker that runs
	// for months.
	warnedMax = 4096
)

// Options tune a Publisher; the zero value is the production setting.
type Options struct {
	// Log receives the drop reports of publishes made outside an activity (inside one, the
	// activity's logger is used, which names the session's workflow and the activity). Nil is
	// slog's default.
	Log *slog.Logger
	// Keys are codec.keys: with them every batch is encrypted before it leaves the worker, and
	// sinks that cannot read encrypted batches (older starters') get nothing.
	Keys *codec.Keyring
	// QueueEvents overrides queueEvents (tests).
	QueueEvents int
	// RetryFirst overrides retryFirst (tests).
	RetryFirst time.Duration
}

// Publisher posts live events to the sinks of sessions, asynchronously: Publish returns at once,
// each sink has its own bounded queue and one sender goroutine that posts the queue in batches,
// in order. A sink that does not keep up loses events, never the session's time.
type Publisher struct {
	opts   Options
	client *http.Client
	// id names this publisher in the stream IDs of its batches.
	id string

	mu     sync.Mutex
	queues map[string]*queue
	warned map[string]bool
}

// NewPublisher returns a publisher with the production bounds.
func NewPublisher() *Publisher { return NewPublisherWith(Options{}) }

// NewPublisherWith returns a publisher with o's settings.
func NewPublisherWith(o Options) *Publisher {
	if o.QueueEvents <= 0 {
		o.QueueEvents = queueEvents
	}
	if o.RetryFirst <= 0 {
		o.RetryFirst = retryFirst
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: dialTimeout}).DialContext,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     idleAfter,
	}
	return &Publisher{
		opts: o, client: &http.Client{Timeout: postTimeout, Transport: tr}, id: randomID(),
		queues: map[string]*queue{}, warned: map[string]bool{},
	}
}

// Publish queues e for every sink and returns without waiting for any of them. Events a sink's
// queue has no room for are dropped, and the first drop for a session and sink is logged.
func (p *Publisher) Publish(ctx context.Context, sinks []string, e contract.Event) {
	if p == nil || len(sinks) == 0 {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	for _, url := range sinks {
		if q := p.queue(url); q != nil {
			q.add(ctx, e)
		}
	}
}

// Flush waits until what was published to sinks so far is posted, for sinks that are healthy: a
// sink with a POST in flight for more than stallAfter, or one whose last POST failed, is not
// waited for. It waits at most flushBound in all. An activity flushes as it ends, so a watcher
// that keeps up has every event of the call before the workflow moves on. It also logs how many
// events were dropped for each sink since its last report.
func (p *Publisher) Flush(ctx context.Context, sinks []string) {
	if p == nil || len(sinks) == 0 {
		return
	}
	deadline := time.Now().Add(flushBound)
	for _, url := range sinks {
		p.mu.Lock()
		q := p.queues[url]
		p.mu.Unlock()
		if q != nil {
			q.flush(deadline)
			q.report(ctx)
		}
	}
}

// queue is the sink's queue, started when needed; nil for a sink URL that cannot be posted to.
func (p *Publisher) queue(url string) *queue {
	p.mu.Lock()
	defer p.mu.Unlock()
	if q := p.queues[url]; q != nil {
		return q
	}
	t, err := parseTarget(url)
	if err != nil {
		return nil
	}
	q := &queue{p: p, url: url, target: t, stream: p.id + "-" + randomID(), next: 1, wake: make(chan struct{}, 1), changed: make(chan struct{})}
	p.queues[url] = q
	return q
}

// warnOnce says whether the first drop for session and sink is still to be logged, and marks it
// logged.
func (p *Publisher) warnOnce(session, sink string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := session + "\x00" + sink
	if p.warned[k] {
		return false
	}
	if len(p.warned) >= warnedMax {
		clear(p.warned)
	}
	p.warned[k] = true
	return true
}

// logger is the activity's logger under ctx, or the publisher's own.
func (p *Publisher) logger(ctx context.Context) interface {
	Warn(string, ...any)
	Info(string, ...any)
} {
	if activity.IsActivity(ctx) {
		return activity.GetLogger(ctx)
	}
	if p.opts.Log != nil {
		return p.opts.Log
	}
	return slog.Default()
}

// queued is one event waiting for its sink, with its position in the stream.
type queued struct {
	seq  int64
	e    contract.Event
	size int
}

// queue is one sink's events and the state of its sender.
type queue struct {
	p      *Publisher
	url    string
	target target
	// stream names the sequence this queue numbers: positions are per stream, from 1.
	stream string

	mu      sync.Mutex
	pending []queued
	bytes   int
	// next is the position the next published event gets, queued or dropped.
	next int64
	// done is the last position the sender is finished with (posted, or dropped with its batch).
	done int64
	// sendingSince is when the POST in flight started; zero when none is.
	sendingSince time.Time
	// retryAt is when the sender tries again after a failure; failures counts them in a row.
	retryAt  time.Time
	failures int
	// dropped counts the events the sink never got; reported is what was logged of it.
	dropped, reported int64
	session           string
	running           bool
	wake              chan struct{}
	// changed is closed and replaced whenever done, sendingSince or retryAt change.
	changed chan struct{}
}

// add queues e or drops it.
func (q *queue) add(ctx context.Context, e contract.Event) {
	size := len(e.Text) + len(e.Arguments) + 256
	q.mu.Lock()
	seq := q.next
	q.next++
	if e.WorkflowID != "" {
		q.session = e.WorkflowID
	}
	full := len(q.pending) >= q.p.opts.QueueEvents || q.bytes+size > queueBytes
	if !full {
		q.pending = append(q.pending, queued{seq: seq, e: e, size: size})
		q.bytes += size
	} else {
		q.dropped++
	}
	start := !q.running
	q.running = true
	session := q.session
	q.mu.Unlock()
	if full {
		q.warnDrop(ctx, session, "its queue is full: the watcher does not keep up")
		return
	}
	if start {
		go q.run()
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// warnDrop logs the first drop for the queue's session and sink.
func (q *queue) warnDrop(ctx context.Context, session, why string) {
	if q.p.warnOnce(session, q.url) {
		q.p.logger(ctx).Warn("dropping live events for a watcher; the session is not slowed, and its transcript stays complete",
			"session", session, "sink", q.target.display, "reason", why)
	}
}

// run is the sink's sender: it posts what is queued, a batch at a time, until the queue has been
// empty for idleAfter.
func (q *queue) run() {
	idle := time.NewTimer(idleAfter)
	defer idle.Stop()
	for {
		q.mu.Lock()
		wait := time.Until(q.retryAt)
		n := min(len(q.pending), batchEvents)
		q.mu.Unlock()
		if wait > 0 {
			time.Sleep(wait)
			continue
		}
		if n == 0 {
			idle.Reset(idleAfter)
			select {
			case <-q.wake:
				continue
			case <-idle.C:
				if q.retire() {
					q.report(context.Background())
					return
				}
				continue
			}
		}
		q.send()
	}
}

// retire ends the sender when nothing was queued meanwhile.
func (q *queue) retire() bool {
	q.p.mu.Lock()
	defer q.p.mu.Unlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) > 0 {
		return false
	}
	q.running = false
	if q.p.queues[q.url] == q {
		delete(q.p.queues, q.url)
	}
	return true
}

// send posts the next batch: on success the sink is healthy again; on failure the batch is
// dropped and the sender backs off.
func (q *queue) send() {
	q.mu.Lock()
	n := min(len(q.pending), batchEvents)
	batch := make([]queued, n)
	copy(batch, q.pending)
	q.sendingSince = time.Now()
	q.signal()
	session := q.session
	q.mu.Unlock()

	err := q.post(batch)

	q.mu.Lock()
	q.pending = q.pending[n:]
	for _, b := range batch {
		q.bytes -= b.size
	}
	if len(q.pending) == 0 {
		q.pending = nil
	}
	q.done = batch[n-1].seq
	q.sendingSince = time.Time{}
	if err == nil {
		q.failures, q.retryAt = 0, time.Time{}
	} else {
		q.dropped += int64(n)
		q.failures++
		q.retryAt = time.Now().Add(backoff(q.p.opts.RetryFirst, q.failures))
	}
	q.signal()
	q.mu.Unlock()
	if err != nil {
		q.warnDrop(context.Background(), session, err.Error())
	}
}

// backoff is the wait after the nth failure in a row.
func backoff(first time.Duration, n int) time.Duration {
	d := first
	for i := 1; i < n && d < retryCap; i++ {
		d *= 2
	}
	return min(d, retryCap)
}

// signal wakes the flushes waiting on the queue; q.mu is held.
func (q *queue) signal() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// post sends one batch: in one POST, or one event a POST to a sink of a starter from before
// batches.
func (q *queue) post(batch []queued) error {
	if q.target.legacy {
		if q.p.opts.Keys != nil {
			return errors.New("the watcher's starter predates encrypted events, and with codec.keys nothing leaves the worker in clear")
		}
		for _, b := range batch {
			body, err := json.Marshal(b.e)
			if err != nil {
				return fmt.Errorf("encoding a live event: %w", err)
			}
			if err := q.do(body, "application/json"); err != nil {
				return err
			}
		}
		return nil
	}
	body, ctype, err := q.p.encode(q.stream, batch)
	if err != nil {
		return err
	}
	return q.do(body, ctype)
}

// do makes one POST.
func (q *queue) do(body []byte, ctype string) error {
	req, err := http.NewRequest(http.MethodPost, q.target.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("posting live events: %w", err)
	}
	req.Header.Set("Content-Type", ctype)
	q.target.sign(req, body)
	resp, err := q.p.client.Do(req)
	if err != nil {
		return fmt.Errorf("posting live events: %w", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("posting live events: the watcher answered %s", resp.Status)
	}
	return nil
}

// flush waits until every event queued before it is done with, the sink stalls or backs off, or
// the deadline passes.
func (q *queue) flush(deadline time.Time) {
	q.mu.Lock()
	want := q.next - 1
	q.mu.Unlock()
	for {
		q.mu.Lock()
		now := time.Now()
		finished := q.done >= want || len(q.pending) == 0 && q.sendingSince.IsZero()
		backingOff := now.Before(q.retryAt) || q.failures > 0
		stalledAt := time.Time{}
		if !q.sendingSince.IsZero() {
			stalledAt = q.sendingSince.Add(stallAfter)
		}
		changed := q.changed
		q.mu.Unlock()
		if finished || backingOff || (!stalledAt.IsZero() && !now.Before(stalledAt)) || !now.Before(deadline) {
			return
		}
		until := deadline
		if !stalledAt.IsZero() && stalledAt.Before(until) {
			until = stalledAt
		}
		t := time.NewTimer(time.Until(until))
		select {
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// report logs the events dropped for the sink since the last report.
func (q *queue) report(ctx context.Context) {
	q.mu.Lock()
	n, total, session := q.dropped-q.reported, q.dropped, q.session
	q.reported = q.dropped
	q.mu.Unlock()
	if n > 0 {
		q.p.logger(ctx).Warn("live events were dropped for a watcher", "session", session, "sink", q.target.display, "dropped", n, "dropped_total", total)
	}
}

// randomID is 8 random bytes in hex.
func randomID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// encode is a batch's body and content type as its sink reads it.
func (p *Publisher) encode(stream string, batch []queued) ([]byte, string, error) {
	b := Batch{Stream: stream, Seq: batch[0].seq, Events: make([]contract.Event, len(batch))}
	for i, x := range batch {
		b.Events[i] = x.e
	}
	body, err := json.Marshal(b)
	if err != nil {
		return nil, "", fmt.Errorf("encoding live events: %w", err)
	}
	if p.opts.Keys != nil {
		if body, err = p.opts.Keys.Seal(body); err != nil {
			return nil, "", fmt.Errorf("encrypting live events: %w", err)
		}
	}
	return body, BatchContentType, nil
}
