package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/events"
)

// statusPoll is how often the follower asks the session for session-level events (blocked calls,
// limits, escalations); live deltas and tool events arrive through the sink without polling.
const statusPoll = 300 * time.Millisecond

// redraw is how often the status region at a terminal is drawn again (spinner, seconds).
const redraw = 125 * time.Millisecond

// follower shows one session until it ends and turns the user's keys into signals and answers.
type follower struct {
	c           client.Client
	workflowID  string
	p           printer
	sink        *events.Sink
	interactive bool

	seen      int
	prompted  string
	cancelled bool
	// approval is the call waiting for approval that the user was last asked about.
	approval *contract.Approval
	offered  string

	// screen and prog draw the status region; screen passes output through unchanged when the
	// output is not a terminal.
	screen *screen
	prog   *progress
	// turn is the turn of the last live model event, so a new turn's first event can wait until
	// the session-level events before it are printed.
	turn   int
	dialog dialog
	editor *lineEditor
	// asked is the escalation the user was last asked about, so a question is asked once.
	asked string
	// leaving is set by a cancel key pressed after the cancel was sent: leave at once.
	leaving bool
}

// follow prints the session's events until its result arrives. Esc or Ctrl+C at a terminal, or
// SIGINT/SIGTERM otherwise, cancel the session; the result then says cancelled.
func (f *follower) follow(ctx context.Context, run client.WorkflowRun) (contract.Summary, error) {
	type result struct {
		sum contract.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := sessionResult(context.WithoutCancel(ctx), run)
		done <- result{sum, err}
	}()

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	f.screen, f.prog = newScreen(nil), newProgress(time.Now())
	keys, restore := f.readKeys()
	defer restore()
	if f.interactive {
		defer f.attachScreen()()
	}

	tick := time.NewTicker(statusPoll)
	defer tick.Stop()
	frames := time.NewTicker(redraw)
	defer frames.Stop()
	for {
		select {
		case r := <-done:
			f.drain(ctx)
			f.pollStatus(ctx)
			f.closeDialog()
			if r.err != nil {
				return contract.Summary{}, fmt.Errorf("waiting for session %s: %w", f.workflowID, r.err)
			}
			return r.sum, nil
		case e := <-f.sink.Events():
			f.live(ctx, e)
		case <-tick.C:
			f.pollStatus(ctx)
		case <-frames.C:
			f.screen.draw(f.prog.lines(time.Now()))
		case <-sigs:
			if f.cancelled {
				return f.leave()
			}
			f.cancel(ctx, "interrupted at the terminal")
		case k, ok := <-keys:
			if !ok {
				keys = nil
				continue
			}
			f.keys(ctx, k)
			if f.leaving {
				return f.leave()
			}
		case r := <-f.editDone():
			f.edited(ctx, r)
		}
	}
}

// leave ends following without waiting for the session, after a second interrupt (a signal, or
// Esc or Ctrl+C at the terminal): the session may have no worker to end it.
func (f *follower) leave() (contract.Summary, error) {
	f.p.info(fmt.Sprintf("interrupted again: leaving without waiting; session %s ends once a worker takes the cancel (starter watch %s shows it)", f.workflowID, f.workflowID))
	return contract.Summary{}, &exitError{code: ExitCancelled}
}

// attachScreen sends the text printer's output through a screen over the same writer, and
// returns the function that clears the status region and detaches it.
func (f *follower) attachScreen() func() {
	tp, ok := f.p.(*textPrinter)
	if !ok {
		return func() {}
	}
	tp.mu.Lock()
	w := tp.w
	f.screen = newScreen(w)
	tp.w = f.screen
	tp.mu.Unlock()
	return func() {
		f.screen.release()
		f.screen.clear()
		tp.mu.Lock()
		tp.w = w
		tp.mu.Unlock()
	}
}

// live prints one event from the sink. The first event of a new model call waits for a status
// poll, so an answer, a blocked call or a limit recorded before that call prints before its text.
func (f *follower) live(ctx context.Context, e contract.Event) {
	if e.Event == contract.EventModelCall || (e.Event == contract.EventDelta && e.Turn != f.turn) {
		f.pollStatus(ctx)
		f.turn = e.Turn
	}
	f.prog.observe(e, time.Now())
	f.p.event(e)
}

// drain prints the live events that arrived before the result.
func (f *follower) drain(ctx context.Context) {
	for {
		select {
		case e := <-f.sink.Events():
			f.live(ctx, e)
		default:
			return
		}
	}
}

// pollStatus prints session-level events that are new since the last poll and offers the
// terminal prompt for a new escalation.
func (f *follower) pollStatus(ctx context.Context) {
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	val, err := f.c.QueryWorkflow(qctx, f.workflowID, "", contract.QueryStatus)
	if err != nil {
		return
	}
	var st contract.SessionStatus
	if val.Get(&st) != nil {
		return
	}
	for _, e := range st.Events {
		if e.Seq > f.seen {
			f.seen = e.Seq
			f.p.event(e)
		}
	}
	f.prog.tokens = st.Usage.Total()
	f.offerApproval(st.Approval)
	e := st.Escalation
	if f.prompted != "" && (e == nil || e.ID != f.prompted || e.Answer != nil) {
		// Answered elsewhere (Slack, another terminal, the deadline): stop asking.
		f.prompted = ""
		f.closeDialog()
	}
	switch {
	case e != nil && e.Answer == nil && len(e.Choices) > 0:
		f.prog.waiting = "waiting for an answer to escalation " + e.ID
	case st.Approval != nil:
		f.prog.waiting = "waiting for approval of " + st.Approval.Tool
	default:
		f.prog.waiting = ""
	}
	if e != nil && e.Answer == nil && len(e.Choices) > 0 && f.prompted != e.ID && f.asked != e.ID {
		// The escalation itself was printed with the events above; this only asks.
		f.asked = e.ID
		if f.interactive {
			f.prompted = e.ID
			f.askEscalation()
		} else {
			f.p.info(fmt.Sprintf("answer with: starter answer %s %s retry|edit|abort [--text ...]", f.workflowID, e.ID))
		}
	}
}

// cancel sends the cancel signal once; the session then cancels its running turn.
func (f *follower) cancel(ctx context.Context, reason string) {
	if f.cancelled {
		return
	}
	f.cancelled = true
	f.p.info("cancelling: " + reason)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := f.c.SignalWorkflow(sctx, f.workflowID, "", contract.SignalCancel, contract.CancelRequest{Reason: reason, By: "terminal"}); err != nil {
		f.p.info("could not send the cancel signal: " + err.Error())
	}
}

// sessionResult waits for a session's summary: its result when it completed, or the summary its
// end error carries when it was cancelled, aborted, failed or stopped by a limit.
func sessionResult(ctx context.Context, run client.WorkflowRun) (contract.Summary, error) {
	var sum contract.Summary
	err := run.Get(ctx, &sum)
	if ended, ok := contract.EndedSummary(err); ok {
		return ended, nil
	}
	return sum, err
}
