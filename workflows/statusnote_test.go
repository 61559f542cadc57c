package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelrun/keel/internal/contract"
)

// TestStatusTravelsWithTheModelCall: every model call carries the session's status as its turn
// starts (the turn in flight, the turns done, the tokens so far) and each session-level event
// exactly once, in the first call after it happened, so a terminal learns of it with no query.
func TestStatusTravelsWithTheModelCall(t *testing.T) {
	w := newWorld(t, sameCall("r1"), sameCall("r2"), sameCall("r3"), answerReply("changed approach", usage))
	sum := w.run(input(contract.Limits{}))
	require.Equal(t, contract.StatusCompleted, sum.Status)

	reqs := w.modelRequests()
	require.Len(t, reqs, 4)
	for i, r := range reqs {
		require.NotNil(t, r.Status, "model call %d carries the status", i+1)
		assert.Equal(t, i+1, r.Status.Running, "model call %d: the turn in flight", i+1)
		assert.Equal(t, i, r.Status.Turn, "model call %d: turns done", i+1)
		assert.Equal(t, int64(15*i), r.Status.Usage.Total(), "model call %d: tokens so far", i+1)
		assert.Nil(t, r.Status.Escalation, "model call %d: no escalation travels with a turn", i+1)
	}
	for _, i := range []int{0, 1, 2} {
		assert.Empty(t, reqs[i].Status.Events, "model call %d: no event happened before it", i+1)
	}
	require.Len(t, reqs[3].Status.Events, 1, "the blocked third call travels with the next model call")
	assert.Equal(t, contract.EventBlocked, reqs[3].Status.Events[0].Event)
	assert.Equal(t, 1, reqs[3].Status.Counters.BlockedCalls)
}
