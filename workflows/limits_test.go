package workflows_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/jsondur"
)

// busyModel is a model that never concludes: every reply reads a different file, so neither
// repeat detection nor the argument checks stop it.
func busyModel(n int, u contract.Usage) []reply {
	out := make([]reply, n)
	for i := range out {
		out[i] = toolsReply(u, call(fmt.Sprintf("c%d", i+1), "read_file", fmt.Sprintf(`{"path":"file%d.go"}`, i+1)))
	}
	return out
}

// TestLimitsBetweenTurns: the turn and token limits stop a session that would go on forever, tell
// which limit tripped with its numbers, and leave a record of it in the transcript.
func TestLimitsBetweenTurns(t *testing.T) {
	cases := []struct {
		name   string
		limits contract.Limits
		usage  contract.Usage
		limit  string
		reason string
		turns  int
	}{
		{"turns", contract.Limits{MaxTurns: 2}, usage, contract.LimitTurns, "stopped: 2 of 2 turns used", 2},
		{"tokens", contract.Limits{MaxTokens: 100}, contract.Usage{InputTokens: 50, OutputTokens: 10}, contract.LimitTokens, "stopped: 120 of 100 tokens used", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, busyModel(c.turns, c.usage)...)
			sum := w.run(input(c.limits))

			assert.Equal(t, contract.StatusLimit, sum.Status)
			assert.Equal(t, c.limit, sum.Limit)
			assert.Equal(t, c.reason, sum.Reason)
			assert.Equal(t, c.turns, sum.Turns)
			assert.Len(t, w.modelRequests(), c.turns, "no model call after the limit tripped")

			tr := w.transcript()
			require.NotEmpty(t, tr.Pending)
			rec := tr.Pending[len(tr.Pending)-1]
			assert.Equal(t, "limit", rec.Note)
			assert.Equal(t, contract.RoleUser, rec.Role)
			assert.Contains(t, rec.Content, c.reason)
			assert.Equal(t, fmt.Sprintf("head-%d", c.turns), tr.Head)

			st := w.status()
			assert.Equal(t, contract.StatusLimit, st.Status)
			ev := st.Events[len(st.Events)-1]
			assert.Equal(t, contract.EventLimit, ev.Event)
			assert.Equal(t, c.limit, ev.Limit)
		})
	}
}

// TestDurationLimitStopsAHungModelCall: the duration timer races the turn, so a model call that
// hangs past the limit is cancelled and the session ends on the duration limit, on time.
func TestDurationLimitStopsAHungModelCall(t *testing.T) {
	hung := toolsReply(usage, call("c1", "read_file", readCalc))
	hung.delay = 2 * time.Hour
	w := newWorld(t, hung)
	start := w.env.Now()
	sum := w.run(input(contract.Limits{MaxDuration: jsondur.Duration(10 * time.Minute)}))

	assert.Equal(t, contract.StatusLimit, sum.Status)
	assert.Equal(t, contract.LimitDuration, sum.Limit)
	assert.True(t, strings.HasPrefix(sum.Reason, "stopped: 10m0s of 10m0s"), "reason %q", sum.Reason)
	elapsed := w.env.Now().Sub(start)
	assert.GreaterOrEqual(t, elapsed, 10*time.Minute)
	assert.Less(t, elapsed, 2*time.Hour, "the session did not wait for the hung call")
	started, cancelled := w.activities()
	assert.Equal(t, []string{contract.CallModelActivity}, started, "the hung turn's tool calls never ran")
	assert.Equal(t, []string{contract.CallModelActivity}, cancelled, "the hung model call was cancelled")

	tr := w.transcript()
	require.NotEmpty(t, tr.Pending)
	assert.Equal(t, "limit", tr.Pending[len(tr.Pending)-1].Note)
}

// TestCarriedStateCountsAgainstLimits: a session continued from carried state (continue-as-new or
// a fork) keeps counting from where the earlier run stopped.
func TestCarriedStateCountsAgainstLimits(t *testing.T) {
	w := newWorld(t, busyModel(1, usage)...)
	in := input(contract.Limits{MaxTurns: 3})
	in.Carry = &contract.SessionState{
		TranscriptRef: contract.TranscriptRef{Head: "head-earlier",
			Pending: []contract.Message{{Role: contract.RoleTool, ToolCallID: "old", Content: "earlier result"}}},
		Turns:    2,
		Usage:    contract.Usage{InputTokens: 100},
		Counters: contract.Counters{ToolCalls: 4, GatewayCalls: 2, GatewayAttempts: 2},
	}
	sum := w.run(in)

	assert.Equal(t, contract.StatusLimit, sum.Status)
	assert.Equal(t, "stopped: 3 of 3 turns used", sum.Reason)
	assert.Equal(t, 5, sum.ToolCalls)
	assert.Equal(t, int64(115), sum.Tokens)
	reqs := w.modelRequests()
	require.Len(t, reqs, 1)
	assert.Equal(t, 3, reqs[0].Turn)
	assert.Equal(t, "head-earlier", reqs[0].Head)
	require.Len(t, reqs[0].Append, 1)
	assert.Equal(t, "old", reqs[0].Append[0].ToolCallID)
}
