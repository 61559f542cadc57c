package escalation

import (
	"context"
	"sync"

	"github.com/keelrun/keel/internal/contract"
)

// Notifier sends one escalation notice on one channel. Notices are sent from a retryable Temporal
// activity, so Notify must be idempotent by escalation ID: a second call for the same ID must not
// post twice.
type Notifier interface {
	Name() string
	Notify(ctx context.Context, e contract.Escalation) error
}

// PermanentError marks a notice that no retry can deliver: a setting the channel needs is missing
// (the GitHub channel with no pull request to comment on). The notice activity fails it at once
// instead of spending its retries on it.
type PermanentError struct{ Err error }

func (e PermanentError) Error() string { return e.Err.Error() }
func (e PermanentError) Unwrap() error { return e.Err }

// noticeKey names one escalation of one session. Notifiers key on both IDs, so two sessions
// whose escalation IDs happen to be equal still each get their notice.
func noticeKey(e contract.Escalation) string { return e.WorkflowID + "\x00" + e.ID }

// sentSet remembers which escalations a notifier already delivered in this process, so a
// retried activity on the same worker skips the network altogether.
type sentSet struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (s *sentSet) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[id]
}

func (s *sentSet) add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[id] = true
}
