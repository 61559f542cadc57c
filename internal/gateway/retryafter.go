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
