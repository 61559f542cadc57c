package gateway

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ParseRetryAfter reads the wait a server asked for. `retry-after-ms` (milliseconds, fractions
// allowed) wins over `Retry-After` (seconds, or an HTTP date taken relative to now), because it
// is the more precise of the two. A missing, malformed, negative or unrepresentable value gives
// (0, false), and the caller falls back to its own backoff.
func ParseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if d, ok := parseNumber(h.Get("Retry-After-Ms"), time.Millisecond); ok {
		return d, true
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if d, ok := parseNumber(v, time.Second); ok {
		return d, true
	}
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return 0, false // a number, but negative or out of range: not a date either
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now)
	if d < 0 {
		return 0, false
	}
	return d, true
}

// parseNumber parses a non-negative decimal count of unit.
func parseNumber(s string, unit time.Duration) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f < 0 {
		return 0, false
	}
	d := f * float64(unit)
	if d >= math.MaxInt64 {
		return 0, false
	}
	return time.Duration(d), true
}

// resetHeaders are the rate-limit reset headers of the providers, each with the header that says
// how much of that limit remains: Anthropic's hold an RFC 3339 time, OpenAI's a duration such as
// "6m0s" or "20ms".
var resetHeaders = []struct{ reset, remaining string }{
	{"Anthropic-Ratelimit-Requests-Reset", "Anthropic-Ratelimit-Requests-Remaining"},
	{"Anthropic-Ratelimit-Tokens-Reset", "Anthropic-Ratelimit-Tokens-Remaining"},
	{"Anthropic-Ratelimit-Input-Tokens-Reset", "Anthropic-Ratelimit-Input-Tokens-Remaining"},
	{"Anthropic-Ratelimit-Output-Tokens-Reset", "Anthropic-Ratelimit-Output-Tokens-Remaining"},
	{"X-Ratelimit-Reset-Requests", "X-Ratelimit-Remaining-Requests"},
	{"X-Ratelimit-Reset-Tokens", "X-Ratelimit-Remaining-Tokens"},
}

// ParseReset reads when an exhausted limit resets from the providers' rate-limit headers: the
// latest reset among the limits whose remaining count is 0 (a limit with room left is not what
// refused the request). It gives (0, false) when no exhausted limit names a reset in the future.
func ParseReset(h http.Header, now time.Time) (time.Duration, bool) {
	var latest time.Duration
	for _, rh := range resetHeaders {
		if strings.TrimSpace(h.Get(rh.remaining)) != "0" {
			continue
		}
		v := strings.TrimSpace(h.Get(rh.reset))
		var d time.Duration
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			d = t.Sub(now)
		} else if pd, err := time.ParseDuration(v); err == nil {
			d = pd
		}
		latest = max(latest, d)
	}
	return latest, latest > 0
}
