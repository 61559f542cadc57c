package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/events"
	"github.com/keelrun/keel/internal/session"
	"github.com/keelrun/keel/internal/tui"
)

// Each status query is a billed Temporal action, so a follower learns of session-level events
// (blocked calls, limits, escalations, approvals) from the live events: every turn's model call
// publishes the session's status first (contract.EventStatus). It queries only when the events
// fall quiet outside a running model call or tool (the session may wait for a person, or be
// between turns), after quietPoll, then backing off to backstopPoll while nothing is heard; while
// a model call or tool runs, backstopPoll after the last event it published.
const (
	quietPoll    = time.Second
	backstopPoll = 20 * time.Second
)

// redraw is how often the status region at a terminal is drawn again (spinner, seconds).
const redraw = 125 * time.Millisecond

// CancelWait is how long the starter waits, after the first cancel (Esc or Ctrl+C at a terminal,
// SIGINT or SIGTERM), for the session to end; then it leaves anyway with exit 130. A supervisor
// that sends one SIGTERM gets its process back within this bound even when no worker takes the
// cancel; a second cancel leaves at once.
const CancelWait = 10 * time.Second

// secondKeyGrace is how long after a cancel key the starter goes on reading the terminal when the
// session ends first: people press Esc twice, and the second press belongs to the starter, not to
// the shell that gets the terminal back.
const secondKeyGrace = 500 * time.Millisecond

// follower shows one session until it ends and turns the user's keys into signals and answers.
type follower struct {
	c           session.Client
	workflowID  string
	p           printer
	source      *events.Source
	interactive bool

	seen int
	// m is the terminal's state: which question is open, whether the cancel was sent (tui.Step).
	m tui.Model

	// screen and prog draw the status region; screen passes output through unchanged when the
	// output is not a terminal.
	screen *tui.Screen
	prog   *progress
	// turn is the turn of the last live model event, so a new turn's first event can wait until
	// the session-level events before it are printed.
	turn   int
	editor *tui.LineEditor
	// leaving names what asked to leave at once (a second cancel key or signal); "" until then.
	leaving string
	// detaching names what detached a watcher (a key or a signal); "" until then.
	detaching string
	// settle fires CancelWait after the cancel was sent; nil before.
	settle <-chan time.Time
	// cancelKeyAt is when a cancel key was last pressed; zero when none was.
	cancelKeyAt time.Time
	// ownQueue is the task queue only this process's worker serves (demo, run --dev), or "": a
	// session on it that the starter leaves behind would never end, so leaving terminates it.
	ownQueue string
	// nextPoll is when the status is queried next; quiet is the wait after the sink falls quiet,
	// doubling after each query that follows silence; busy says a model call or a tool runs (its
	// own events will say when it ends).
	nextPoll time.Time
	quiet    time.Duration
	busy     bool
	// attached is set for a session that was running before this follower (watch): its status is
	// asked at once.
	attached bool
	// started is when the session started, for a follower that attached later; zero for a
	// session this starter starts now.
	started time.Time
	// running is the turn in flight, as the last status said.
	running int
	// inFlight is the call showStep showed, until its result is printed: the live events bring
	// the call again, which is not printed twice.
	inFlight *contract.Event
	// sourceDone says the live events ended: the session's last run ended and every event of it
	// was delivered.
	sourceDone bool
	// polled is when the status was last asked.
	polled time.Time
}

// turnRuns says a turn of the session runs, as the live events' reader knows from the session's
// history: what it does next arrives as events, and the session waits for no one meanwhile.
func (f *follower) turnRuns() bool { return f.source != nil && !f.sourceDone && f.source.Busy() }

// liveEvents is the channel of live events, nil once it closed.
func (f *follower) liveEvents() <-chan contract.Event {
	if f.sourceDone || f.source == nil {
		return nil
	}
	return f.source.Events()
}

// drainBound bounds how long a follower waits, after the session's result arrived, for the live
// events to reach the end of its history (a few long polls).
const drainBound = 10 * time.Second

// follow prints the session's events until its result arrives. Esc or Ctrl+C at a terminal, or
// SIGINT/SIGTERM otherwise, cancel the session; the result then says cancelled. After a cancel the
// starter waits at most CancelWait for the result, and a second cancel leaves at once.
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
	// SIGHUP (the terminal closed) and SIGPIPE (the reader of the output left) would otherwise kill
	// the starter where it stands, leaving a session its in-process worker can never end.
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	// The session's clock counts from its start, also for a watcher that attached later.
	start := time.Now()
	if !f.started.IsZero() && f.started.Before(start) {
		start = f.started
	}
	f.screen, f.prog = tui.NewScreen(nil), newProgress(start)
	f.prog.since = time.Now()
	if f.attached {
		f.prog.keys = keysWatch
	}
	f.m = tui.Model{Interactive: f.interactive, Watching: f.attached, WorkflowID: f.workflowID}
	keys, restore := f.readKeys()
	defer restore()
	if f.interactive {
		defer f.attachScreen()()
	}
	finish := func(r result) (contract.Summary, error) {
		f.drain(ctx)
		f.endEvents(r.sum)
		f.step(ctx, tui.SessionEnded{})
		f.swallowSecondKey(keys)
		if r.err != nil {
			return contract.Summary{}, fmt.Errorf("waiting for session %s: %w", f.workflowID, r.err)
		}
		return r.sum, nil
	}

	// A session this starter just started has nothing to show before its first turn posts; one
	// watched mid-way is asked at once.
	f.heard(time.Now(), !f.attached)
	if f.attached && f.interactive {
		f.p.info(tui.WatchHelp)
	}
	if f.attached {
		f.pollStatus(ctx)
		f.showStep(ctx)
	}
	frames := time.NewTicker(redraw)
	defer frames.Stop()
	for {
		select {
		case r := <-done:
			return finish(r)
		case e, ok := <-f.liveEvents():
			if !ok {
				f.sourceDone = true
				continue
			}
			f.live(ctx, e)
		case <-frames.C:
			if now := time.Now(); !now.Before(f.nextPoll) {
				if f.turnRuns() && now.Sub(f.polled) < backstopPoll {
					// A turn runs: its events say what happens; only the backstop asks (a
					// sub-agent the turn waits for may be waiting for a person).
					f.nextPoll = f.polled.Add(backstopPoll)
				} else {
					f.pollStatus(ctx)
				}
			}
			f.screen.Draw(f.prog.lines(time.Now()))
		case <-f.settle:
			select {
			case r := <-done:
				return finish(r)
			default:
			}
			f.step(ctx, tui.CancelTimeout{})
			f.p.info(fmt.Sprintf("the session did not end within %s of the cancel; %s", seconds(CancelWait), f.leftBehind(ctx)))
			return contract.Summary{}, &exitError{code: ExitCancelled}
		case sig := <-sigs:
			if done, sum, err := f.signal(ctx, sig); done {
				return sum, err
			}
		case sig := <-brokenPipe:
			if !outputGone() {
				continue
			}
			if done, sum, err := f.signal(ctx, sig); done {
				return sum, err
			}
		case k, ok := <-keys:
			if !ok {
				keys = nil
				continue
			}
			f.keys(ctx, k)
			if f.detaching != "" {
				return f.detach()
			}
			if f.leaving != "" {
				return f.leave(ctx, f.leaving)
			}
		case r := <-f.editDone():
			f.edited(ctx, r)
		}
	}
}

// signal hands a signal to the state machine; done says the follower leaves now.
func (f *follower) signal(ctx context.Context, sig os.Signal) (bool, contract.Summary, error) {
	f.step(ctx, tui.Signal{Reason: signalReason(sig)})
	if f.detaching != "" {
		sum, err := f.detach()
		return true, sum, err
	}
	if f.leaving != "" {
		sum, err := f.leave(ctx, f.leaving)
		return true, sum, err
	}
	return false, contract.Summary{}, nil
}

// brokenPipe receives SIGPIPE for the whole process (Run asks for it before anything is printed):
// a write to a closed pipe then fails instead of killing the starter where it stands, which would
// leave a session its in-process worker can never end; the follower cancels it instead, once
// outputGone confirms it was the output's reader that left and not a server's connection.
var brokenPipe = make(chan os.Signal, 1)

// signalReason is how the cancel names the signal that asked for it: a supervisor's SIGTERM is not
// a person at the terminal.
func signalReason(sig os.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "terminated by a signal (SIGTERM)"
	case syscall.SIGHUP:
		return "the terminal hung up (SIGHUP)"
	case syscall.SIGPIPE:
		return "the reader of the output went away (SIGPIPE)"
	}
	return "interrupted by a signal (SIGINT)"
}

// errDetached is what follow returns when a watcher detached: the session goes on, and the
// starter exits 0.
var errDetached = errors.New("detached; the session goes on")

// detach ends watching and leaves the session running.
func (f *follower) detach() (contract.Summary, error) {
	f.p.info(fmt.Sprintf("detached (%s): session %s goes on; `starter watch %s` follows it again, `starter cancel %s` ends it",
		f.detaching, f.workflowID, f.workflowID, f.workflowID))
	return contract.Summary{}, errDetached
}

// leave ends following without waiting for the session, after a second interrupt (a signal, or
// Esc or Ctrl+C at the terminal): the session may have no worker to end it.
func (f *follower) leave(ctx context.Context, what string) (contract.Summary, error) {
	f.p.info(fmt.Sprintf("interrupted again (%s): leaving without waiting; %s", what, f.leftBehind(ctx)))
	return contract.Summary{}, &exitError{code: ExitCancelled}
}

// leftBehind says what becomes of the session the starter leaves before it ended. A session whose
// only worker runs in this process would wait forever once the process exits, so it is terminated.
func (f *follower) leftBehind(ctx context.Context) string {
	if f.ownQueue != "" {
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		// A job started earlier by another starter runs on that starter's queue: leave it alone.
		if done, _ := f.c.TerminateOnQueue(tctx, f.workflowID, f.ownQueue, "its starter left before the cancel finished, and its only worker ran in that starter"); done {
			return fmt.Sprintf("session %s is terminated, since its only worker runs in this starter and stops with it", f.workflowID)
		}
	}
	return fmt.Sprintf("session %s may still be cancelling (it ends once a worker takes the cancel): `starter watch %s` shows how it ends", f.workflowID, f.workflowID)
}

// swallowSecondKey goes on reading the terminal, dropping what arrives, until secondKeyGrace has
// passed since the last cancel key: a second press the person meant for the starter would
// otherwise reach the shell (an Esc there eats the next command's first letter).
func (f *follower) swallowSecondKey(keys <-chan []byte) {
	if keys == nil || f.cancelKeyAt.IsZero() {
		return
	}
	wait := time.Until(f.cancelKeyAt.Add(secondKeyGrace))
	if wait <= 0 {
		return
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-keys:
			if !ok {
				return
			}
		case <-timer.C:
			return
		}
	}
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
	f.screen = tui.NewScreen(w)
	tp.w = f.screen
	tp.mu.Unlock()
	return func() {
		f.screen.Release()
		f.screen.Clear()
		tp.mu.Lock()
		tp.w = w
		tp.mu.Unlock()
	}
}

// live prints one live event. A turn's status arrives before its model call, so an answer, a
// blocked call or a limit recorded before that call prints before its text; a session too old to
// send it is asked instead.
func (f *follower) live(ctx context.Context, e contract.Event) {
	now := time.Now()
	if call := f.inFlight; call != nil && e.CallID == call.CallID {
		switch e.Event {
		case contract.EventToolCall:
			// showStep printed it already.
			return
		case contract.EventToolResult:
			f.inFlight = nil
		}
	}
	if e.Event == contract.EventStatus {
		if e.Status != nil {
			f.turn = e.Turn
			f.apply(ctx, *e.Status)
		}
		f.heard(now, true)
		return
	}
	newTurn := e.Event == contract.EventModelCall || (e.Event == contract.EventDelta && e.Turn != f.turn)
	if (newTurn && e.Turn != f.turn) || f.prog.waiting != "" {
		// No status came with this turn (a worker from before status events), or the session was
		// waiting for a person and runs again: the answer may have come from elsewhere.
		f.pollStatus(ctx)
	}
	if newTurn {
		f.turn = e.Turn
	}
	f.prog.observe(e, now)
	f.heard(now, f.runs(e))
	f.p.event(e)
}

// runs says whether, after e, something runs that will post its own end: a model call before its
// first delta, a retry's wait, a tool call before its result.
func (f *follower) runs(e contract.Event) bool {
	switch e.Event {
	case contract.EventModelCall, contract.EventRetry, contract.EventToolCall:
		return true
	case contract.EventOutput:
		return f.busy
	}
	return false
}

// heard schedules the next status query after a live event: a backstop while something runs,
// else quietPoll after this event.
func (f *follower) heard(now time.Time, busy bool) {
	f.busy, f.quiet = busy, quietPoll
	if busy {
		f.nextPoll = now.Add(backstopPoll)
		return
	}
	f.nextPoll = now.Add(quietPoll)
}

// showStep shows what the turn in flight runs, for a follower that attached mid-turn: a call that
// started before the session was watched has its events in its heartbeats only every liveness
// beat, and in its result, so a long command would otherwise show as "starting" until then. One
// query of the turn, once.
func (f *follower) showStep(ctx context.Context) {
	if f.running == 0 {
		return
	}
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	step, err := f.c.TurnStep(qctx, f.workflowID, f.running)
	if err != nil || step.Since.IsZero() {
		return
	}
	f.turn = step.Turn
	if step.Tool == "" {
		f.prog.observe(contract.Event{Event: contract.EventModelCall, Turn: step.Turn}, step.Since)
		return
	}
	e := contract.Event{Event: contract.EventToolCall, WorkflowID: f.workflowID, Turn: step.Turn, Tool: step.Tool, CallID: step.CallID, Arguments: step.Arguments, Time: step.Since}
	f.prog.observe(e, step.Since)
	f.busy = true
	f.nextPoll = time.Now().Add(backstopPoll)
	f.p.event(e)
	f.inFlight = &e
}

// endEvents prints the session-level events its end carries that no status showed yet.
func (f *follower) endEvents(sum contract.Summary) {
	for _, e := range sum.Events {
		if e.Seq > f.seen {
			f.seen = e.Seq
			f.p.event(e)
		}
	}
	if sum.Tokens > 0 {
		f.prog.counted(sum.Tokens)
	}
}

// drain prints the live events up to the end of the session's history, which the result can
// reach before them: the last call's final events are in its result, which the live events read
// after the session's end was decided. It waits at most drainBound.
func (f *follower) drain(ctx context.Context) {
	bound := time.NewTimer(drainBound)
	defer bound.Stop()
	for ch := f.liveEvents(); ch != nil; {
		select {
		case e, ok := <-ch:
			if !ok {
				f.sourceDone = true
				return
			}
			f.live(ctx, e)
		case <-bound.C:
			return
		}
	}
}

// pollStatus prints session-level events that are new since the last poll and offers the
// terminal prompt for a new escalation.
func (f *follower) pollStatus(ctx context.Context) {
	f.quiet = min(2*max(f.quiet, quietPoll), backstopPoll)
	if f.busy {
		f.quiet = backstopPoll
	}
	f.nextPoll = time.Now().Add(f.quiet)
	f.polled = time.Now()
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := f.c.LiveStatus(qctx, f.workflowID)
	if err != nil {
		return
	}
	f.apply(ctx, st)
}

// apply shows a status, queried or posted by a turn: its new events, the tokens, and what the
// session waits for; the state machine asks the person what it should ask.
func (f *follower) apply(ctx context.Context, st contract.SessionStatus) {
	f.running = st.Running
	for _, e := range st.Events {
		if e.Seq > f.seen {
			f.seen = e.Seq
			f.p.event(e)
		}
	}
	f.prog.counted(st.Usage.Total())
	switch e := st.Escalation; {
	case session.AwaitsAnswer(e):
		f.prog.waiting = "waiting for an answer to escalation " + e.ID
	case st.Approval != nil:
		f.prog.waiting = "waiting for approval of " + st.Approval.Tool
	case st.Wait != nil:
		f.prog.waiting = st.Wait.Text(time.Now(), time.Local)
	default:
		f.prog.waiting = ""
	}
	// The escalation and the call themselves were printed with the events above; this only asks.
	f.step(ctx, tui.Status{Escalation: st.Escalation, Approval: st.Approval})
}

// cancel sends the cancel signal (the state machine asks for it once) and starts the CancelWait
// bound; second names what leaves at once from then on.
func (f *follower) cancel(ctx context.Context, reason, second string) {
	f.settle = time.After(CancelWait)
	f.p.info(fmt.Sprintf("cancelling: %s; waiting up to %s for %s; %s leaves now", reason, seconds(CancelWait), f.settling(), second))
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := f.c.Cancel(sctx, f.workflowID, contract.CancelRequest{Reason: reason, By: "terminal"}); err != nil {
		f.p.info("could not send the cancel signal: " + errors.Unwrap(err).Error())
	}
}

// settling says what the starter waits for after a cancel: a worker to take the session at all,
// or the worker to stop what it runs.
func (f *follower) settling() string {
	switch {
	case f.prog.waiting != "":
		return "the session to end"
	case f.prog.what == "starting":
		return "a worker to take the cancel (none has started the session yet)"
	default:
		return "the worker to stop what runs (" + f.prog.what + ") and end the session"
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
