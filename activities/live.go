package activities

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// liveEvery is how often a running command's new output is posted to the session's sinks.
const liveEvery = 250 * time.Millisecond

// liveOutput publishes a running command's output to the session's sinks while it runs, as output
// events: at most one per liveEvery, each with at most contract.OutputEventMax bytes (the end of
// what arrived since the last one). Best effort and bounded: the command writes into a buffer
// that never blocks, and a slow sink delays only the next event. It returns nil and a no-op when
// nobody is watching.
func (a *Activities) liveOutput(ctx context.Context, req contract.ToolRequest) (io.Writer, func()) {
	if a.Events == nil || len(req.Sinks) == 0 {
		return nil, func() {}
	}
	buf := &pendingOutput{}
	return buf, every(ctx, liveEvery, func(ctx context.Context) {
		if text := buf.take(); text != "" {
			a.Events.Publish(ctx, req.Sinks, contract.Event{
				Event: contract.EventOutput, WorkflowID: req.SessionID, Turn: req.Turn,
				Tool: req.Call.Name, CallID: req.Call.ID, Text: text,
			})
		}
	})
}

// pendingOutput keeps the end of the output not yet posted.
type pendingOutput struct {
	mu sync.Mutex
	b  []byte
}

// Write keeps the last contract.OutputEventMax bytes and never fails or blocks for long.
func (p *pendingOutput) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.b = append(p.b, b...)
	if over := len(p.b) - contract.OutputEventMax; over > 0 {
		p.b = append(p.b[:0], p.b[over:]...)
	}
	return len(b), nil
}

// take returns what is pending and empties the buffer.
func (p *pendingOutput) take() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := string(p.b)
	p.b = p.b[:0]
	return s
}

// liveKey is the context key of a tool call's live output writer.
type liveKey struct{}

// withLiveOutput hands the live output writer to the tool runner through the context, so runners
// that wrap DefaultTools pass it on without knowing of it.
func withLiveOutput(ctx context.Context, w io.Writer) context.Context {
	if w == nil {
		return ctx
	}
	return context.WithValue(ctx, liveKey{}, w)
}

// liveOutputOf is the live output writer of the call running under ctx, or nil.
func liveOutputOf(ctx context.Context) io.Writer {
	w, _ := ctx.Value(liveKey{}).(io.Writer)
	return w
}

// endLive flushes a call's live events as its activity ends, so a watcher that keeps up has all of
// them before the workflow moves on; one that stalls or cannot be reached is not waited for
// (events.Publisher.Flush), and the worker logs what it dropped for it.
func (a *Activities) endLive(ctx context.Context, sinks []string) {
	a.Events.Flush(ctx, sinks)
}
