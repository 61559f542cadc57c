package workflows_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/jsondur"
)

// compactor is the CompactTranscript activity as a test sees it: it records every request and
// answers with what answer returns.
type compactor struct {
	mu     sync.Mutex
	reqs   []contract.CompactRequest
	answer func(n int, req contract.CompactRequest) (contract.CompactResult, error)
}

func (c *compactor) compact(_ context.Context, req contract.CompactRequest) (contract.CompactResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, req)
	return c.answer(len(c.reqs), req)
}

func (c *compactor) requests() []contract.CompactRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]contract.CompactRequest(nil), c.reqs...)
}

// folded answers every compaction with a new view and a summary call of 50 tokens.
func folded(n int, req contract.CompactRequest) (contract.CompactResult, error) {
	return contract.CompactResult{
		Compaction: &contract.Compaction{Head: fmt.Sprintf("summary-%d", n), Cut: 2 + 2*(req.Turn-req.KeepReplies)},
		Replies:    req.Turn - req.KeepReplies, Usage: contract.Usage{InputTokens: 40, OutputTokens: 10}, Attempt: 1, SavedTokens: 300,
	}, nil
}

// TestCompactionDecision: a session compacts before a turn only when the last model call's input
// reached 80 % of limits.context_tokens and enough turns lie behind the newest two; it tries again
// two turns later at the earliest; every model call after a compaction carries its view; the
// summary call's tokens are in the usage and the summary; a compaction that folds nothing or fails
// costs the session nothing but a notice.
func TestCompactionDecision(t *testing.T) {
	cases := []struct {
		name    string
		window  int64
		input   int64
		answer  func(int, contract.CompactRequest) (contract.CompactResult, error)
		carry   *contract.Compaction
		atTurns []int
		// views are the compaction heads the model calls of turns 1..8 carry ("" for none).
		views       []string
		compactions int
		notice      bool
	}{
		{name: "off", window: 0, input: 5000, answer: folded,
			views: []string{"", "", "", "", "", "", "", ""}},
		{name: "below the threshold", window: 1000, input: 799, answer: folded,
			views: []string{"", "", "", "", "", "", "", ""}},
		{name: "at the threshold", window: 1000, input: 800, answer: folded, atTurns: []int{4, 6},
			views: []string{"", "", "", "", "summary-1", "summary-1", "summary-2", "summary-2"}, compactions: 2},
		{name: "nothing to fold", window: 1000, input: 900, atTurns: []int{4, 6},
			answer: func(int, contract.CompactRequest) (contract.CompactResult, error) {
				return contract.CompactResult{}, nil
			},
			views: []string{"", "", "", "", "", "", "", ""}},
		{name: "the summary call fails", window: 1000, input: 900, atTurns: []int{4, 6}, notice: true,
			answer: func(int, contract.CompactRequest) (contract.CompactResult, error) {
				return contract.CompactResult{}, temporal.NewApplicationErrorWithOptions("refused", contract.ModelErrorType,
					temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{contract.Failure{Class: contract.ClassRefusal, Reason: "the model declined", Attempts: 1}}})
			},
			views: []string{"", "", "", "", "", "", "", ""}},
		{name: "carried into a new run", window: 1000, input: 100, answer: folded, carry: &contract.Compaction{Head: "carried", Cut: 6},
			views: []string{"carried", "carried", "carried", "carried", "carried", "carried", "carried", "carried"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := contract.Usage{InputTokens: c.input, OutputTokens: 20}
			w := newWorld(t, append(busyModel(7, u), answerReply("done", u))...)
			comp := &compactor{answer: c.answer}
			w.compact = comp.compact
			in := input(contract.Limits{MaxTurns: 20, ContextTokens: c.window})
			if c.carry != nil {
				in.Carry = &contract.SessionState{TranscriptRef: contract.TranscriptRef{Head: "head-0"}, Compaction: c.carry}
			}
			sum := w.run(in)
			require.Equal(t, contract.StatusCompleted, sum.Status)

			var at []int
			for _, r := range comp.requests() {
				at = append(at, r.Turn)
				assert.Equal(t, fmt.Sprintf("head-%d", r.Turn), r.Head, "a compaction folds the stored transcript")
				assert.Equal(t, 2, r.KeepReplies)
			}
			assert.Equal(t, c.atTurns, at, "the turns after which a compaction ran")
			var views []string
			for _, r := range w.modelRequests() {
				v := ""
				if r.Compaction != nil {
					v = r.Compaction.Head
				}
				views = append(views, v)
			}
			assert.Equal(t, c.views, views, "the view each model call carried")

			turnTokens := 8 * u.Total()
			assert.Equal(t, c.compactions, sum.Compactions)
			assert.Equal(t, int64(c.compactions*50), sum.CompactionTokens)
			assert.Equal(t, turnTokens+int64(c.compactions*50), sum.Tokens, "the summary calls' tokens are in the usage")
			var events, notices int
			for _, e := range sum.Events {
				switch {
				case e.Event == contract.EventCompaction:
					events++
					assert.Equal(t, int64(50), e.Tokens)
					assert.Equal(t, int64(300), e.SavedTokens)
				case e.Event == contract.EventNotice && e.Class == contract.ClassRefusal:
					notices++
				}
			}
			assert.Equal(t, c.compactions, events, "compaction events")
			assert.Equal(t, c.notice, notices > 0, "a notice of the failed compaction")
		})
	}
}

// TestCompactionStops: a compaction in flight is a step like a turn: a person's cancel and the
// duration limit cancel its model call and end the session at once, with no turn after it.
func TestCompactionStops(t *testing.T) {
	cases := []struct {
		name   string
		limits contract.Limits
		cancel bool
		status string
	}{
		{name: "cancelled", limits: contract.Limits{ContextTokens: 1000}, cancel: true, status: contract.StatusCancelled},
		{name: "out of time", limits: contract.Limits{ContextTokens: 1000, MaxDuration: jsondur.Duration(30 * time.Second)}, status: contract.StatusLimit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := contract.Usage{InputTokens: 900, OutputTokens: 20}
			w := newWorld(t, append(busyModel(7, u), answerReply("done", u))...)
			w.compact = func(_ context.Context, req contract.CompactRequest) (contract.CompactResult, error) {
				return folded(1, req)
			}
			w.compactDelay = time.Hour
			if c.cancel {
				w.at(10*time.Second, func() { w.env.SignalWorkflow(contract.SignalCancel, contract.CancelRequest{Reason: "enough"}) })
			}
			sum := w.run(input(c.limits))
			assert.Equal(t, c.status, sum.Status)
			assert.Equal(t, 4, sum.Turns, "no turn after the compaction")
			assert.Len(t, w.modelRequests(), 4)
			_, cancelled := w.activities()
			assert.Contains(t, cancelled, contract.CompactActivity, "the compaction's model call was cancelled")
			assert.Zero(t, sum.Compactions)
		})
	}
}
