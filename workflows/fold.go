package workflows

import (
	"fmt"
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/contract"
)

// foldTurn returns the session's state with what one turn did folded in, for every way the turn
// can end, and the session-level events to keep (the caller stamps and numbers them). It is the
// one place that decides what a session keeps of a turn; it is pure so that a test can state
// exactly what each ending keeps (TestFoldTurn).
//
// A turn that ran to its end (turnDone: a final answer, its tool calls done, a surfaced failure, a
// call waiting for approval, an escalation) keeps everything: the turn count, the transcript, the
// usage and counters, the input tokens of its model call (which decide when to compact), its
// guards and its events. A turn stopped by a cancel or the duration limit (turnCancelled,
// turnTimedOut) ends the session: it keeps what the summary reports (the turn, if the model was
// called, the transcript, usage, counters and events) and leaves the guards, since no turn follows.
// A turn a person's message interrupted (turnInterrupted) keeps everything when it got as far as
// its tool calls (it has a head); stopped during its model call it keeps the turn, the usage and
// counters, and the text already shown, as an assistant message noted "interrupted"; either way
// a notice says it was interrupted.
//
// Recorded histories replay through these rules and must end with the same summary: a change to
// them is a change to what a replayed session returns.
func foldTurn(st contract.SessionState, turn int, res contract.TurnResult, outcome turnOutcome) (contract.SessionState, []contract.Event) {
	switch {
	case outcome == turnCancelled || outcome == turnTimedOut:
		if res.Counters.GatewayCalls > 0 {
			st.Turns = max(st.Turns, turn)
		}
		st = keepTranscript(st, res)
		st.Usage, st.Counters = st.Usage.Add(res.Usage), st.Counters.Add(res.Counters)
		st.ModelTokens = addModelTokens(st.ModelTokens, res.Model, res.Usage.Total())
		return st, res.Events
	case outcome == turnInterrupted && res.Head == "":
		st.Turns = turn
		st.Usage, st.Counters = st.Usage.Add(res.Usage), st.Counters.Add(res.Counters)
		st.ModelTokens = addModelTokens(st.ModelTokens, res.Model, res.Usage.Total())
		if res.Partial != "" {
			st.Pending = append(slices.Clip(st.Pending), contract.Message{Role: contract.RoleAssistant, Content: res.Partial, Note: "interrupted"})
		}
		return st, []contract.Event{interruptedNotice(turn)}
	}
	st.Turns = turn
	st = keepTranscript(st, res)
	st.Usage, st.Counters = st.Usage.Add(res.Usage), st.Counters.Add(res.Counters)
	st.ModelTokens = addModelTokens(st.ModelTokens, res.Model, res.Usage.Total())
	if res.Counters.GatewayCalls > 0 && res.Usage.InputTokens > 0 {
		st.LastInput = res.Usage.InputTokens
	}
	repairs := st.Repairs
	st.Guards = res.Guards
	if res.Repairs == nil {
		// A result without repair counts (none in its JSON) leaves the session's as they were.
		st.Repairs = repairs
	}
	if outcome == turnInterrupted {
		return st, append(slices.Clip(res.Events), interruptedNotice(turn))
	}
	return st, res.Events
}

// keepTranscript moves the session's transcript to where the turn left it; a turn that stored
// nothing (no head) leaves it.
func keepTranscript(st contract.SessionState, res contract.TurnResult) contract.SessionState {
	if res.Head != "" {
		st.TranscriptRef = contract.TranscriptRef(res.Transcript)
	}
	return st
}

func interruptedNotice(turn int) contract.Event {
	return contract.Event{Event: contract.EventNotice, Turn: turn, Text: fmt.Sprintf("turn %d interrupted by a person's message", turn)}
}

// fold folds a turn's result into the session (foldTurn) and keeps its events. A turn that lets
// the session go on also updates the search attributes; a stopped one leaves that to finish.
func (s *session) fold(ctx workflow.Context, turn int, res contract.TurnResult, outcome turnOutcome) {
	var events []contract.Event
	tokens, turns := s.state.Usage.Total(), s.state.Turns
	s.state, events = foldTurn(s.state, turn, res, outcome)
	s.state.Tree.Running = 0 // the turn's own spending is in its result now
	s.chargeAncestors(ctx, s.state.Usage.Total()-tokens, s.state.Turns-turns)
	for _, e := range events {
		s.addEvent(ctx, e)
	}
	if outcome == turnDone || outcome == turnInterrupted {
		s.upsertSearch(ctx)
	}
}
