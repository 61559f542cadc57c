package gateway

import (
	"net/http"
	"testing"
	"time"
)

// TestParseReset: the reset of an exhausted limit is read from either provider's headers, the
// latest one wins, and a limit with room left or a reset in the past says nothing.
func TestParseReset(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		headers map[string]string
		want    time.Duration
		ok      bool
	}{
		{"anthropic tokens", map[string]string{"anthropic-ratelimit-tokens-remaining": "0", "anthropic-ratelimit-tokens-reset": "2026-12-01T14:05:00Z"}, 2*time.Hour + 5*time.Minute, true},
		{"openai requests", map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s"}, 6 * time.Minute, true},
		{"latest of two", map[string]string{
			"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1s",
			"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "2h",
		}, 2 * time.Hour, true},
		{"room left", map[string]string{"x-ratelimit-remaining-tokens": "5", "x-ratelimit-reset-tokens": "2h"}, 0, false},
		{"in the past", map[string]string{"anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": "2026-12-01T11:00:00Z"}, 0, false},
		{"malformed", map[string]string{"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "soon"}, 0, false},
		{"none", nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.headers {
				h.Set(k, v)
			}
			got, ok := ParseReset(h, now)
			if got != tc.want || ok != tc.ok {
				t.Errorf("ParseReset = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
