package activities

import (
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/gateway"
	"github.com/keelrun/keel/internal/jsondur"
)

// TestUsageLimit: only a session that waits out limits gets the usage_limit class, and only for a
// throttle whose server-asked wait lies beyond the retry cap; the reset time is now plus that wait.
func TestUsageLimit(t *testing.T) {
	now := time.Date(2026, 12, 1, 11, 52, 0, 0, time.UTC)
	throttle := func(after time.Duration) gateway.Diagnosis {
		return gateway.Diagnosis{Class: contract.ClassThrottle, Handling: gateway.Retry, RetryAfter: after, Message: "gateway rate limited"}
	}
	waits := contract.ModelRequest{ModelSettings: contract.ModelSettings{WaitLimits: true}}
	for _, tc := range []struct {
		name string
		req  contract.ModelRequest
		d    gateway.Diagnosis
		ok   bool
	}{
		{"two hours", waits, throttle(2 * time.Hour), true},
		{"within the default cap", waits, throttle(8 * time.Second), false},
		{"beyond a configured cap", contract.ModelRequest{ModelSettings: contract.ModelSettings{WaitLimits: true, Retry: contract.RetryConfig{Cap: jsondur.Duration(time.Second)}}}, throttle(3 * time.Second), true},
		{"session does not wait", contract.ModelRequest{}, throttle(2 * time.Hour), false},
		{"budget", waits, gateway.Diagnosis{Class: contract.ClassBudget, Handling: gateway.Surface, RetryAfter: 2 * time.Hour}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := usageLimit(tc.req, tc.d, 1, now)
			if ok != tc.ok {
				t.Fatalf("usageLimit ok = %v, want %v (%+v)", ok, tc.ok, f)
			}
			if ok && (f.Class != contract.ClassUsageLimit || !f.ResetAt.Equal(now.Add(tc.d.RetryAfter)) || !strings.Contains(f.Reason, "resets at")) {
				t.Errorf("failure %+v", f)
			}
		})
	}
}
