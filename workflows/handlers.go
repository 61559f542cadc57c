package workflows

import (
	"errors"
	"fmt"
	"slices"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/contract"
)

// registerHandlers installs every query, signal and update before the session first blocks, so no
// early message is lost.
func (s *session) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandlerWithOptions(ctx, contract.QueryStatus, s.queryStatus, workflow.QueryHandlerOptions{
		Description: "Where the session is: status, turns, tokens, counters, limits, the pending escalation or approval, recent events",
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandlerWithOptions(ctx, contract.QueryTranscript, func() (contract.Transcript, error) {
		return contract.Transcript{Head: s.state.Head, Pending: slices.Concat(s.state.Pending, s.state.Inbox)}, nil
	}, workflow.QueryHandlerOptions{
		Description: "The transcript's head in the message store plus the messages not stored yet",
	}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateAnswerEscalation,
		func(_ workflow.Context, a contract.Answer) (contract.AnswerResult, error) { return s.answer(a) },
		workflow.UpdateHandlerOptions{Validator: s.validateAnswer, Description: `Answer the pending escalation: retry, edit (with text) or abort. Input {"escalation_id":"...","action":"retry|edit|abort","text":"..."}`},
	); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateApproveCall,
		func(_ workflow.Context, d contract.ApprovalDecision) (contract.AnswerResult, error) {
			return s.decide(d)
		},
		workflow.UpdateHandlerOptions{Validator: s.validateApproval, Description: `Approve or deny the tool call waiting for a person. Input {"call_id":"...","digest":"<sha-256 of the arguments>","approve":true}; with "allow_for":"tool" (or "command", for run_command) later calls of the tool (or command) run without asking for the rest of the session`},
	); err != nil {
		return err
	}
	if err := s.registerSay(ctx); err != nil {
		return err
	}
	s.listenSignals(ctx)
	s.listenCharges(ctx)
	return nil
}

// listenSignals drains the session's signal channels in a coroutine, so a signal is handled
// whatever the main loop is blocked on.
func (s *session) listenSignals(ctx workflow.Context) {
	cancelCh := workflow.GetSignalChannelWithOptions(ctx, contract.SignalCancel, workflow.SignalChannelOptions{
		Description: `Stop the session: the running model call and tool are cancelled and it ends cancelled. Input {"reason":"...","by":"..."}`,
	})
	answerCh := workflow.GetSignalChannelWithOptions(ctx, contract.SignalAnswerEscalation, workflow.SignalChannelOptions{
		Description: `Answer the pending escalation without a reply (the answer_escalation update says whether it was accepted). Input {"escalation_id":"...","action":"retry|edit|abort","text":"..."}`,
	})
	sinkCh := workflow.GetSignalChannelWithOptions(ctx, contract.SignalAttachSink, workflow.SignalChannelOptions{
		Description: `Taken and ignored: what starters sent before the watch signal. Input {"url":"http://..."}`,
	})
	watchCh := workflow.GetSignalChannelWithOptions(ctx, contract.SignalWatch, workflow.SignalChannelOptions{
		Description: `Take, renew (every half lease) or give back (lease 0) a watcher's lease on the live events: while one runs, running model calls and tools put their recent events in their heartbeats. Input {"watcher":"...","lease":"10m"}`,
	})
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(cancelCh, func(c workflow.ReceiveChannel, _ bool) {
				var req contract.CancelRequest
				c.Receive(ctx, &req)
				s.cancel(req)
			})
			sel.AddReceive(answerCh, func(c workflow.ReceiveChannel, _ bool) {
				var a contract.Answer
				c.Receive(ctx, &a)
				if err := s.validateAnswer(a); err != nil {
					workflow.GetLogger(ctx).Warn("answer signal refused", "escalation", a.EscalationID, "reason", err.Error())
					return
				}
				_, _ = s.answer(a)
			})
			sel.AddReceive(s.sayCh, func(c workflow.ReceiveChannel, _ bool) {
				var m contract.Say
				c.Receive(ctx, &m)
				s.say(ctx, m)
			})
			sel.AddReceive(sinkCh, func(c workflow.ReceiveChannel, _ bool) {
				var a contract.AttachSink
				c.Receive(ctx, &a)
				if a.URL != "" && !slices.Contains(s.sinks, a.URL) {
					s.sinks = append(s.sinks, a.URL)
				}
			})
			sel.AddReceive(watchCh, func(c workflow.ReceiveChannel, _ bool) {
				var w contract.Watch
				c.Receive(ctx, &w)
				s.takeWatch(ctx, w)
			})
			sel.Select(ctx)
			if ctx.Err() != nil {
				return
			}
		}
	})
}

// cancel stops the session: it schedules nothing more and cancels the turn in flight.
func (s *session) cancel(req contract.CancelRequest) {
	if s.cancelReq != nil {
		return
	}
	s.cancelReq = &req
	if s.cancelTurn != nil {
		s.cancelTurn()
	}
}

func (s *session) queryStatus() (contract.SessionStatus, error) {
	return contract.SessionStatus{
		Status:     s.status,
		Turn:       s.state.Turns,
		Running:    s.running,
		Usage:      s.state.Usage,
		Counters:   s.state.Counters,
		Limits:     s.in.Limits,
		Escalation: s.escalation,
		Approval:   s.approval,
		Wait:       s.wait,
		Events:     s.state.Events,
	}, nil
}

// statusNote is the status a turn's model call publishes as it starts: the turn in flight,
// tokens, counters and the session-level events no earlier note carried, so an attached terminal
// learns of them without a query (each query is a billed action). Only payload changes: no command.
func (s *session) statusNote() *contract.SessionStatus {
	st, _ := s.queryStatus()
	st.Limits, st.Escalation, st.Approval, st.Events = contract.Limits{}, nil, nil, nil
	for _, e := range s.state.Events {
		if e.Seq > s.noted {
			st.Events = append(st.Events, e)
		}
	}
	s.noted = s.state.EventSeq
	return &st
}

// validateAnswer accepts only an answer to the escalation pending right now. It must not change
// state: a rejected update is not written to history.
func (s *session) validateAnswer(a contract.Answer) error {
	e := s.escalation
	switch {
	case e == nil:
		return errors.New("no escalation is pending")
	case a.EscalationID != e.ID:
		return fmt.Errorf("escalation %q is not the pending one (%s)", a.EscalationID, e.ID)
	case e.Answer != nil:
		// Typed, so a client tells "someone answered first" apart without reading the words.
		return temporal.NewApplicationError(fmt.Sprintf("escalation %s was already answered: %s", e.ID, answerText(e.Answer)), contract.RefusalAlreadyAnswered)
	case !slices.Contains(e.Choices, a.Action):
		return fmt.Errorf("action %q is not one of %v", a.Action, e.Choices)
	case a.Action == contract.ActionEdit && a.Text == "":
		return errors.New("edit needs text: corrected arguments or an instruction for the model")
	}
	return nil
}

// answer records the first valid answer; the waiting loop picks it up.
func (s *session) answer(a contract.Answer) (contract.AnswerResult, error) {
	if err := s.validateAnswer(a); err != nil {
		return contract.AnswerResult{}, err
	}
	s.escalation.Answer = &a
	return contract.AnswerResult{Accepted: true, Message: fmt.Sprintf("%s recorded for %s", a.Action, a.EscalationID)}, nil
}

// answeredByDeadline is the By of the answer the session gives itself when nobody answered.
const answeredByDeadline = "deadline"

// viaPhrase says in plain words where an answer came from, after the action.
var viaPhrase = map[string]string{
	"terminal": "in the terminal",
	"cli":      "with starter answer",
	"slack":    "in Slack",
	"signal":   "by signal",
	"github":   "on GitHub",
	"webhook":  "through the webhook",
}

// answerText says who answered what, and where, as people say it: "ann answered edit in Slack",
// "answered retry in the terminal" (the answerer is left out when it only names the channel
// again), "the deadline passed: abort".
func answerText(a *contract.Answer) string {
	if a.By == answeredByDeadline {
		return "the deadline passed: " + a.Action
	}
	text := "answered " + a.Action
	if a.By != "" && a.By != a.Via {
		text = a.By + " " + text
	}
	if where, ok := viaPhrase[a.Via]; ok {
		text += " " + where
	} else if a.Via != "" {
		text += " via " + a.Via
	}
	return text
}
