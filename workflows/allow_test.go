package workflows_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/jsondur"
)

// TestAllowForTheSession: an approval that allows the tool, or run_command's exact command, lets
// the later calls it covers run without asking, across turns; a call it does not cover (another
// command, another tool) still waits for a person. The turn says which allowance let a call
// through, and the summary lists the allowances.
func TestAllowForTheSession(t *testing.T) {
	goVet := `{"command":"go vet ./..."}`
	write := `{"path":"calc.go","content":"package calc\n"}`
	script := func() []reply {
		return []reply{
			toolsReply(usage, call("c1", "run_command", goTest)),
			toolsReply(usage, call("c2", "run_command", goTest), call("c3", "run_command", goVet)),
			toolsReply(usage, call("c4", "write_file", write)),
			answerReply("done", usage),
		}
	}
	cases := []struct {
		name     string
		allowFor string
		// asked are the calls that waited for a person, in order; unasked those an allowance
		// let through.
		asked, unasked []string
		allowed        []contract.Allowance
	}{
		{"command", contract.AllowCommand, []string{"c1", "c3", "c4"}, []string{"c2"},
			[]contract.Allowance{{Tool: "run_command", Command: "go test ./...", By: "ana"}}},
		{"tool", contract.AllowTool, []string{"c1", "c4"}, []string{"c2", "c3"},
			[]contract.Allowance{{Tool: "run_command", By: "ana"}}},
		{"none", "", []string{"c1", "c2", "c3", "c4"}, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, script()...)
			var asked []string
			var results []contract.AnswerResult
			// A person looks every minute and approves what waits; the first approval allows more.
			for i := 1; i <= 30; i++ {
				w.at(time.Duration(i)*time.Minute, func() {
					a := w.status().Approval
					if a == nil {
						return
					}
					d := contract.ApprovalDecision{CallID: a.CallID, Digest: a.Digest, Approve: true, By: "ana"}
					if len(asked) == 0 {
						d.AllowFor = c.allowFor
					}
					asked = append(asked, a.CallID)
					w.env.UpdateWorkflow(contract.UpdateApproveCall, "", &testsuite.TestUpdateCallback{
						OnAccept: func() {}, OnReject: func(err error) { t.Errorf("approval of %s rejected: %v", a.CallID, err) },
						OnComplete: func(v any, _ error) {
							if r, ok := v.(contract.AnswerResult); ok {
								results = append(results, r)
							}
						},
					}, d)
				})
			}
			in := input(contract.Limits{})
			in.Policy.Approval = contract.ApprovalWrites
			in.Policy.ApprovalTimeout = jsondur.Duration(time.Hour)
			sum := w.run(in)

			require.Equal(t, contract.StatusCompleted, sum.Status)
			assert.Equal(t, c.asked, asked, "the calls that waited for a person")
			assert.Len(t, w.toolRequests(), 4, "every call ran")
			assert.Equal(t, c.allowed, sum.Allowed, "the summary's allowances")
			var unasked []string
			for _, e := range w.status().Events {
				if e.Event == contract.EventAnswer && e.CallID != "" && strings.Contains(e.Text, "runs without asking") {
					unasked = append(unasked, e.CallID)
				}
			}
			assert.Equal(t, c.unasked, unasked, "the calls the session says ran without asking")
			if c.allowFor != "" {
				require.NotEmpty(t, results)
				assert.Contains(t, results[0].Message, "from now on in this session")
			}
		})
	}
}

// TestAllowForRefusesADenial: a denial allows nothing, and an unknown scope is refused, so a
// decision can never widen what runs unasked by mistake.
func TestAllowForRefusesADenial(t *testing.T) {
	for _, d := range []contract.ApprovalDecision{
		{Approve: false, AllowFor: contract.AllowTool},
		{Approve: true, AllowFor: "everything"},
	} {
		w := newWorld(t, toolsReply(usage, call("c1", "run_command", goTest)), answerReply("done", usage))
		var rejected error
		w.at(time.Minute, func() {
			a := w.status().Approval
			require.NotNil(t, a)
			d.CallID, d.Digest = a.CallID, a.Digest
			w.env.UpdateWorkflow(contract.UpdateApproveCall, "", &testsuite.TestUpdateCallback{
				OnAccept: func() {}, OnReject: func(err error) { rejected = err }, OnComplete: func(any, error) {},
			}, d)
		})
		w.at(2*time.Minute, func() {
			a := w.status().Approval
			require.NotNil(t, a, "the refused decision left the call waiting")
			w.env.UpdateWorkflow(contract.UpdateApproveCall, "", &testsuite.TestUpdateCallback{
				OnAccept: func() {}, OnReject: func(error) {}, OnComplete: func(any, error) {},
			}, contract.ApprovalDecision{CallID: a.CallID, Digest: a.Digest, Approve: true})
		})
		in := input(contract.Limits{})
		in.Policy.Approval = contract.ApprovalWrites
		in.Policy.ApprovalTimeout = jsondur.Duration(time.Hour)
		sum := w.run(in)
		assert.Error(t, rejected, "decision %+v", d)
		assert.Empty(t, sum.Allowed)
	}
}
