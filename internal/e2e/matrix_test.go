package e2e

import (
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

// allFormats is every wire format.
var allFormats = contract.Providers

// matrixChecks are what a row of the fault matrix (fakegw.Matrix) checks beyond the status and
// the attempts, by mode.
var matrixChecks = map[string]func(t *testing.T, r testenv.Run, recs []fakegw.Record){
	fakegw.ModeRateLimit:       waitsAtLeastRetryAfter,
	fakegw.ModeTruncated:       partialShownOnce,
	fakegw.ModeSchema:          secondRequestStrict,
	fakegw.ModeBudget:          escalationRaised,
	fakegw.ModeThrottleForever: waitsAtLeastRetryAfter,
}

// TestGatewayFaultMatrix runs the demo once per fault and wire format through the real worker, a
// real server and the fake gateway over HTTP, and checks the final status, the attempts the summary
// counts, and what the gateway saw.
func TestGatewayFaultMatrix(t *testing.T) {
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	for _, row := range fakegw.Matrix {
		for _, format := range row.Providers() {
			t.Run(row.Mode+"/"+format, func(t *testing.T) {
				t.Parallel()
				r := runStarter(t, []string{"KEEL_GATEWAY_PROVIDER=" + format, "KEEL_GATEWAY_BASE_URL=" + gw.BaseURLFor(format)},
					"demo", "--inject", row.Mode, "--output", "jsonl")
				s := r.Summary
				if s.Status != row.Status {
					t.Fatalf("status %q, want %q (reason %q)\nstderr: %s", s.Status, row.Status, s.Reason, r.Stderr)
				}
				if extra := s.GatewayAttempts - s.GatewayCalls; extra != row.Attempts-1 {
					t.Fatalf("the faulted call took %d attempts, want %d (summary %+v)", extra+1, row.Attempts, s)
				}
				if want := exitCode(row.Status); r.Code != want {
					t.Fatalf("exit %d, want %d", r.Code, want)
				}
				requireTemporalEnd(t, s)
				var recs []fakegw.Record
				for _, rec := range gw.Stats().ForMode(row.Mode) {
					if rec.Format == format && rec.First {
						recs = append(recs, rec)
					}
				}
				if len(recs) != row.Attempts {
					t.Fatalf("the gateway saw %d attempts of the first call, want %d", len(recs), row.Attempts)
				}
				if check := matrixChecks[row.Mode]; check != nil {
					check(t, r, recs)
				}
			})
		}
	}
}

func exitCode(status string) int {
	switch status {
	case contract.StatusCompleted:
		return 0
	case contract.StatusLimit:
		return 3
	case contract.StatusCancelled:
		return 130
	}
	return 1
}

// waitsAtLeastRetryAfter: every retry waited at least the one second the gateway asked for.
func waitsAtLeastRetryAfter(t *testing.T, r testenv.Run, recs []fakegw.Record) {
	t.Helper()
	n := 0
	for _, e := range r.Events {
		if e.Event != contract.EventRetry {
			continue
		}
		n++
		if e.WaitMS < 1000 {
			t.Errorf("retry before attempt %d waited %d ms, less than the Retry-After of 1 s", e.Attempt, e.WaitMS)
		}
		if !strings.Contains(e.Text, "waiting") || !strings.Contains(e.Text, "before attempt") {
			t.Errorf("retry line %q does not say the wait and the attempt", e.Text)
		}
	}
	if n != len(recs)-1 {
		t.Errorf("%d retry events for %d attempts", n, len(recs))
	}
}

// partialShownOnce: the text that arrived before the cut reached the user exactly once, and the
// reason says the stream was cut mid-way.
func partialShownOnce(t *testing.T, r testenv.Run, recs []fakegw.Record) {
	t.Helper()
	var shown strings.Builder
	for _, e := range r.Events {
		if e.Event == contract.EventDelta {
			shown.WriteString(e.Text)
		}
	}
	partial := recs[0].Partial
	if partial == "" || strings.Count(shown.String(), partial) != 1 {
		t.Fatalf("partial %q shown %d times in %q", partial, strings.Count(shown.String(), partial), shown.String())
	}
	if r.Summary.Answer != partial || !strings.Contains(r.Summary.Reason, "cut mid-way") {
		t.Fatalf("summary keeps %q with reason %q; want the partial text and a reason saying it was cut mid-way", r.Summary.Answer, r.Summary.Reason)
	}
}

// secondRequestStrict: the retry of a malformed reply carried the stricter instruction.
func secondRequestStrict(t *testing.T, _ testenv.Run, recs []fakegw.Record) {
	t.Helper()
	if recs[0].Strict || !recs[1].Strict {
		t.Fatalf("strict instruction on attempts: first %v, second %v; want false, true", recs[0].Strict, recs[1].Strict)
	}
}

// escalationRaised: a budget failure raises an escalation notice.
func escalationRaised(t *testing.T, r testenv.Run, _ []fakegw.Record) {
	t.Helper()
	for _, e := range r.Events {
		if e.Event == contract.EventEscalation && e.Escalation != nil && e.Escalation.Reason == contract.ReasonBudget {
			return
		}
	}
	t.Fatal("no escalation notice for the budget failure")
}
