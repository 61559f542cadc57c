package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/escalation"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/events"
)

// statusPoll is how often the follower asks the session for session-level events (blocked calls,
// limits, escalations); live deltas and tool events arrive through the sink without polling.
const statusPoll = 300 * time.Millisecond

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
	keys, restore := f.readKeys()
	defer restore()

	tick := time.NewTicker(statusPoll)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			f.drain()
			f.pollStatus(ctx)
			if r.err != nil {
				return contract.Summary{}, fmt.Errorf("waiting for session %s: %w", f.workflowID, r.err)
			}
			return r.sum, nil
		case e := <-f.sink.Events():
			f.p.event(e)
		case <-tick.C:
			f.pollStatus(ctx)
		case <-sigs:
			if f.cancelled {
				// A second interrupt leaves at once: the session may have no worker to end it.
				f.p.info(fmt.Sprintf("interrupted again: leaving without waiting; session %s ends once a worker takes the cancel (starter watch %s shows it)", f.workflowID, f.workflowID))
				return contract.Summary{}, &exitError{code: ExitCancelled}
			}
			f.cancel(ctx, "interrupted at the terminal")
		case k, ok := <-keys:
			if ok {
				f.keys(ctx, k)
			}
		}
	}
}

// drain prints the live events that arrived before the result.
func (f *follower) drain() {
	for {
		select {
		case e := <-f.sink.Events():
			f.p.event(e)
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
	f.offerApproval(st.Approval)
	if e := st.Escalation; e != nil && e.Answer == nil && len(e.Choices) > 0 && f.prompted != e.ID {
		f.prompted = e.ID
		if f.interactive {
			f.p.info(escalation.Text(*e))
			f.p.info("[R]etry, [E]dit, [A]bort?")
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
