package slackbot

import (
	"sync"
	"time"

	"github.com/slack-go/slack"
)

// answerRecord is who answered an escalation through the bot, with what and when. Done is false
// while the answer is on its way to the session.
type answerRecord struct {
	User   string
	Action string
	Text   string
	At     time.Time
	Done   bool
}

// botState is the bot's memory: which escalations it answered (so double clicks and redeliveries
// never send a second answer), the notices' original blocks (so chat.update can keep the
// details), and the signatures seen recently (so a byte-identical replay does nothing). It lives
// in one process; after a restart the session's update validator is the guard.
type botState struct {
	mu      sync.Mutex
	answers map[string]answerRecord
	notices map[string][]slack.Block
	replays map[string]time.Time
}

func newBotState() *botState {
	return &botState{
		answers: map[string]answerRecord{},
		notices: map[string][]slack.Block{},
		replays: map[string]time.Time{},
	}
}

// claim reserves the escalation for rec; if someone holds it already, it returns their record.
func (s *botState) claim(id string, rec answerRecord) (answerRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.answers[id]; ok {
		return prev, false
	}
	s.answers[id] = rec
	return rec, true
}

// settle marks the claimed answer as accepted by the session.
func (s *botState) settle(id string) answerRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.answers[id]
	rec.Done = true
	s.answers[id] = rec
	return rec
}

// release frees a claim whose answer did not get through, so someone can try again.
func (s *botState) release(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.answers, id)
}

// answered returns the record of an escalation's answer, if any.
func (s *botState) answered(id string) (answerRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.answers[id]
	return rec, ok
}

// rememberNotice keeps the first blocks seen for an escalation's notice.
func (s *botState) rememberNotice(id string, blocks []slack.Block) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.notices[id]; !ok && len(blocks) > 0 {
		s.notices[id] = blocks
	}
}

// notice returns the remembered blocks of an escalation's notice.
func (s *botState) notice(id string) []slack.Block {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notices[id]
}

// replayed records a signature and reports whether it was seen within the signing window; older
// entries are dropped because the timestamp check refuses those requests anyway.
func (s *botState) replayed(sig string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, at := range s.replays {
		if now.Sub(at) > 2*MaxSkew {
			delete(s.replays, k)
		}
	}
	if _, ok := s.replays[sig]; ok {
		return true
	}
	s.replays[sig] = now
	return false
}
