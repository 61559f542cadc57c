package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// TestLedger walks calls through the ledger on each backend: nothing recorded reads as not run, a
// claim as unknown, an outcome as the result; a late claim never hides the outcome; a call the
// turn resolved refuses a late claim, and a late outcome is kept but reported as resolved.
func TestLedger(t *testing.T) {
	ctx := context.Background()
	res := contract.ToolResult{Content: "exit 0\ndone", Changed: true}
	for name, open := range backends() {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			base := LedgerKey{SessionID: fmt.Sprintf("ledger-%s-%d", name, time.Now().UnixNano()), Turn: 2, CallID: "call_1", TurnRun: "run-a"}
			key := func(run string) LedgerKey { k := base; k.TurnRun = run; return k }
			claim := func(run string) func() error { return func() error { return s.Claim(ctx, key(run)) } }
			settle := func(run string, wantResolved bool) func() error {
				return func() error {
					resolved, err := s.Settle(ctx, key(run), Outcome{Result: res, Shown: true})
					if err == nil && resolved != wantResolved {
						err = fmt.Errorf("settle reported resolved %v, want %v", resolved, wantResolved)
					}
					return err
				}
			}
			resolve := func(run, want string) func() error {
				return func() error {
					e, err := s.Resolve(ctx, key(run))
					if err == nil && e.Verdict() != want {
						err = fmt.Errorf("resolve read %q, want %q", e.Verdict(), want)
					}
					return err
				}
			}
			steps := []struct {
				name    string
				do      func() error
				wantErr error
				run     string
				want    string
			}{
				{"nothing recorded", nil, nil, "a", contract.LedgerNotRun},
				{"claimed", claim("a"), nil, "a", contract.LedgerUnknown},
				{"claimed twice", claim("a"), nil, "a", contract.LedgerUnknown},
				{"settled", settle("a", false), nil, "a", contract.LedgerOutcome},
				{"claim after the outcome", claim("a"), nil, "a", contract.LedgerOutcome},
				{"resolved after the outcome", resolve("a", contract.LedgerOutcome), nil, "a", contract.LedgerOutcome},
				{"claim after resolving the outcome", claim("a"), nil, "a", contract.LedgerOutcome},
				{"another run of the turn", nil, nil, "b", contract.LedgerNotRun},
				{"settled without a claim", settle("b", false), nil, "b", contract.LedgerOutcome},
				{"resolved before any claim", resolve("c", contract.LedgerNotRun), nil, "c", contract.LedgerNotRun},
				{"a late claim is refused", claim("c"), ErrResolved, "c", contract.LedgerNotRun},
				{"claimed, then resolved", func() error { _ = s.Claim(ctx, key("d")); return resolve("d", contract.LedgerUnknown)() }, nil, "d", contract.LedgerUnknown},
				{"a late outcome is kept, reported resolved", settle("d", true), nil, "d", contract.LedgerOutcome},
			}
			for _, st := range steps {
				if st.do != nil {
					if err := st.do(); !errors.Is(err, st.wantErr) {
						t.Fatalf("%s: %v, want %v", st.name, err, st.wantErr)
					}
				}
				e, err := s.Lookup(ctx, key(st.run))
				if err != nil {
					t.Fatalf("%s: lookup: %v", st.name, err)
				}
				if got := e.Verdict(); got != st.want {
					t.Fatalf("%s: verdict %q, want %q", st.name, got, st.want)
				}
				if st.want == contract.LedgerOutcome && (e.Outcome.Result != res || !e.Outcome.Shown) {
					t.Fatalf("%s: entry %+v, want the outcome %+v", st.name, e, res)
				}
			}
		})
	}
}
