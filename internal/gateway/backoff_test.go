package gateway

import (
	"net/http"
	"testing"
	"time"
)

func fixed(r float64) func() float64 { return func() float64 { return r } }

func TestBackoffWait(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name    string
		b       Backoff
		attempt int
		floor   time.Duration
		want    time.Duration
	}{
		{"attempt 1 at half", Backoff{Rand: fixed(0.5)}, 1, 0, 300 * ms},
		{"attempt 2 at half", Backoff{Rand: fixed(0.5)}, 2, 0, 600 * ms},
		{"attempt 3 at half", Backoff{Rand: fixed(0.5)}, 3, 0, 1200 * ms},
		{"attempt 2 at zero is half the window", Backoff{Rand: fixed(0)}, 2, 0, 400 * ms},
		{"attempt 2 at one is the window", Backoff{Rand: fixed(1)}, 2, 0, 800 * ms},
		{"large attempt at one is the cap", Backoff{Rand: fixed(1)}, 40, 0, 8000 * ms},
		{"large attempt at zero is half the cap", Backoff{Rand: fixed(0)}, 1000, 0, 4000 * ms},
		{"attempt 0 counts as 1", Backoff{Rand: fixed(0.5)}, 0, 0, 300 * ms},
		{"floor above the wait wins, jitter on top", Backoff{Rand: fixed(0.5)}, 1, 2 * time.Second, 2*time.Second + 100*ms},
		{"floor exactly, no jitter drawn", Backoff{Rand: fixed(0)}, 1, 2 * time.Second, 2 * time.Second},
		{"floor may exceed the cap", Backoff{Rand: fixed(1)}, 9, 30 * time.Second, 34 * time.Second},
		{"floor below the wait loses", Backoff{Rand: fixed(0.5)}, 3, 100 * ms, 1200 * ms},
		{"custom base and cap", Backoff{Base: 100 * ms, Cap: 300 * ms, Rand: fixed(1)}, 5, 0, 300 * ms},
		{"rand out of range is clamped", Backoff{Rand: fixed(7)}, 1, 0, 400 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.b.Wait(tt.attempt, tt.floor); got != tt.want {
				t.Errorf("Wait(%d, %v) = %v, want %v", tt.attempt, tt.floor, got, tt.want)
			}
		})
	}
}

func TestBackoffDefaultRandStaysInWindow(t *testing.T) {
	var b Backoff
	for i := range 1000 {
		got := b.Wait(2, 0)
		if got < 400*time.Millisecond || got > 800*time.Millisecond {
			t.Fatalf("draw %d: Wait(2) = %v, want within 400-800 ms", i, got)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
		wantOK bool
	}{
		{"integer seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second, true},
		{"fractional seconds", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond, true},
		{"zero seconds", map[string]string{"Retry-After": "0"}, 0, true},
		{"http date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second, true},
		{"http date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0, false},
		{"milliseconds", map[string]string{"Retry-After-Ms": "250"}, 250 * time.Millisecond, true},
		{"fractional milliseconds", map[string]string{"Retry-After-Ms": "2.5"}, 2500 * time.Microsecond, true},
		{"milliseconds win", map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond, true},
		{"garbage milliseconds fall back", map[string]string{"Retry-After-Ms": "soon", "Retry-After": "3"}, 3 * time.Second, true},
		{"garbage", map[string]string{"Retry-After": "soon-ish"}, 0, false},
		{"negative seconds", map[string]string{"Retry-After": "-4"}, 0, false},
		{"negative milliseconds", map[string]string{"Retry-After-Ms": "-4"}, 0, false},
		{"not a number", map[string]string{"Retry-After": "NaN"}, 0, false},
		{"too large", map[string]string{"Retry-After": "1e300"}, 0, false},
		{"absent", map[string]string{}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			got, ok := ParseRetryAfter(h, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("ParseRetryAfter(%v) = (%v, %v), want (%v, %v)", tt.header, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
