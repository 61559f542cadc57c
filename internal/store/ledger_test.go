package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// TestLedger walks a call through the ledger on each backend: nothing recorded reads as not run,
// a claim as unknown, an outcome as the result, and a late claim never hides the outcome.
func TestLedger(t *testing.T) {
	ctx := context.Background()
	for name, open := range backends() {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			key := LedgerKey{SessionID: fmt.Sprintf("ledger-%s-%d", name, time.Now().UnixNano()), Turn: 2, CallID: "call_1", TurnRun: "run-a"}
			other := key
			other.TurnRun = "run-b"
			res := contract.ToolResult{Content: "exit 0\ndone", Changed: true}
			steps := []struct {
				name  string
				do    func() error
				key   LedgerKey
				want  string
				shown bool
			}{
				{"nothing recorded", nil, key, contract.LedgerNotRun, false},
				{"claimed", func() error { return s.Claim(ctx, key) }, key, contract.LedgerUnknown, false},
				{"claimed twice", func() error { return s.Claim(ctx, key) }, key, contract.LedgerUnknown, false},
				{"settled", func() error { return s.Settle(ctx, key, Outcome{Result: res, Shown: true}) }, key, contract.LedgerOutcome, true},
				{"claim after the outcome", func() error { return s.Claim(ctx, key) }, key, contract.LedgerOutcome, true},
				{"another run of the turn", nil, other, contract.LedgerNotRun, false},
				{"settled without a claim", func() error { return s.Settle(ctx, other, Outcome{Result: contract.ToolResult{Content: "read"}}) }, other, contract.LedgerOutcome, false},
			}
			for _, st := range steps {
				if st.do != nil {
					if err := st.do(); err != nil {
						t.Fatalf("%s: %v", st.name, err)
					}
				}
				e, err := s.Lookup(ctx, st.key)
				if err != nil {
					t.Fatalf("%s: lookup: %v", st.name, err)
				}
				if got := e.Verdict(); got != st.want {
					t.Fatalf("%s: verdict %q, want %q", st.name, got, st.want)
				}
				if st.key == key && st.want == contract.LedgerOutcome && (e.Outcome.Result != res || e.Outcome.Shown != st.shown || !e.Claimed) {
					t.Fatalf("%s: entry %+v, want the claimed outcome %+v", st.name, e, res)
				}
			}
		})
	}
}
