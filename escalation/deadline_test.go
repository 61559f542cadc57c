package escalation

import (
	"testing"
	"time"
)

// TestDeadlineLine: the deadline line says the time left, the default action and the moment.
func TestDeadlineLine(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)
	cases := []struct {
		now  time.Time
		then string
		want string
	}{
		{at.Add(-29*time.Minute - 58*time.Second), "abort", "Deadline in 29m 58s (then: abort), at 2026-12-01T10:30:00Z\n"},
		{at.Add(-90 * time.Second), "deny", "Deadline in 1m 30s (then: deny), at 2026-12-01T10:30:00Z\n"},
		{at.Add(time.Second), "retry", "Deadline passed (then: retry), at 2026-12-01T10:30:00Z\n"},
		{at.Add(-time.Hour), "", "Deadline in 1h 00m, at 2026-12-01T10:30:00Z\n"},
	}
	for _, c := range cases {
		if got := deadlineLine(at, c.then, c.now); got != c.want {
			t.Errorf("deadlineLine(now %s, %q) = %q, want %q", c.now.Format(time.TimeOnly), c.then, got, c.want)
		}
	}
}
