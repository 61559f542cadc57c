package workflows

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/contract"
)

// registerSay installs the say update; the say signal is drained by listenSignals and before the
// session completes or continues as new.
func (s *session) registerSay(ctx workflow.Context) error {
	s.sayCh = workflow.GetSignalChannelWithOptions(ctx, contract.SignalSay, workflow.SignalChannelOptions{
		Description: `Add a message from a person to the session without a reply (the say update says whether it was accepted). Input {"text":"...","interrupt":false}`,
	})
	return workflow.SetUpdateHandlerWithOptions(ctx, contract.UpdateSay,
		func(ctx workflow.Context, m contract.Say) (contract.SayResult, error) { return s.say(ctx, m), nil },
		workflow.UpdateHandlerOptions{Validator: s.validateSay, Description: "Add a message from a person to the session; interrupt: true cancels the turn in flight first"},
	)
}

// validateSay accepts a message only while the session can still deliver it. It must not change
// state: a rejected update is not written to history.
func (s *session) validateSay(m contract.Say) error {
	switch {
	case strings.TrimSpace(m.Text) == "":
		return errors.New("the message is empty")
	case len(m.Text) > contract.MaxSayBytes:
		return fmt.Errorf("the message is %d bytes; the most a message may have is %d", len(m.Text), contract.MaxSayBytes)
	case s.closing || (s.status != contract.StatusRunning && s.status != contract.StatusWaiting && s.status != contract.StatusWaitingReset):
		return fmt.Errorf("the session has ended (%s); start a new one or fork this one", s.endedStatus())
	}
	return nil
}

func (s *session) endedStatus() string {
	if s.closing && s.status == contract.StatusRunning {
		return contract.StatusCompleted
	}
	return s.status
}

// say queues a person's message for the next model call and records it where people look: the
// session's events (watch, --output jsonl) and, through the inbox, the transcript.
func (s *session) say(ctx workflow.Context, m contract.Say) contract.SayResult {
	if err := s.validateSay(m); err != nil {
		workflow.GetLogger(ctx).Warn("say refused", "reason", err.Error())
		return contract.SayResult{Message: err.Error()}
	}
	s.state.SaySeq++
	s.state.Inbox = append(s.state.Inbox, contract.Message{Role: contract.RoleUser, Note: "say", Content: contract.PersonPrefix + m.Text})
	by := sayBy(m)
	s.addEvent(ctx, contract.Event{Event: contract.EventSay, Turn: s.state.Turns + 1, Text: m.Text, By: by})
	msg := fmt.Sprintf("message %d from %s queued for the next model call", s.state.SaySeq, by)
	if m.Interrupt && s.cancelTurn != nil && s.modelTurn {
		s.interrupted = true
		s.cancelTurn()
		msg = fmt.Sprintf("message %d from %s: the turn in flight is being interrupted; the message goes to the next model call", s.state.SaySeq, by)
	}
	return contract.SayResult{Accepted: true, Seq: s.state.SaySeq, Message: msg}
}

func sayBy(m contract.Say) string {
	by := m.By
	if by == "" {
		by = "someone"
	}
	if m.Via != "" {
		by += " via " + m.Via
	}
	return by
}

// drainSay takes the say signals that arrived but were not yet handled, so none is left behind
// when the session completes or continues as new.
func (s *session) drainSay(ctx workflow.Context) {
	for {
		var m contract.Say
		if !s.sayCh.ReceiveAsync(&m) {
			return
		}
		s.say(ctx, m)
	}
}

// deliverInbox moves the queued messages into the messages the next model call stores first. The
// turn's input is recorded in history, so a message is delivered exactly once, also when a worker
// dies or the session continues as new (the inbox travels in the carried state).
func (s *session) deliverInbox(ctx workflow.Context) {
	if len(s.state.Inbox) == 0 || !s.takes(ctx, versionSay) {
		return
	}
	s.state.Pending = append(s.state.Pending, s.state.Inbox...)
	s.state.Inbox = nil
}

// holdForInbox says whether a session whose model just answered without tool calls must go on
// because a person's message is still waiting for the model. Once it says no, the session refuses
// new messages (closing), so none arrives after the last model call and is lost.
func (s *session) holdForInbox(ctx workflow.Context) bool {
	s.drainSay(ctx)
	if len(s.state.Inbox) == 0 {
		s.closing = true
		_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
		s.drainSay(ctx)
		if len(s.state.Inbox) == 0 {
			return false
		}
		s.closing = false
	}
	return s.takes(ctx, versionSay)
}
