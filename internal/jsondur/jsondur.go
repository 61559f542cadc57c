// Package jsondur holds the duration type of every duration a Keel payload carries. Payloads show
// in the Web UI and in histories, where "30m0s" reads and 1800000000000 does not. It is a leaf
// package so the contract and the breaker (which the contract imports) share the one type.
package jsondur

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration that JSON writes as text ("30m0s"). It still reads the nanosecond
// numbers that inputs held before durations were text, so the histories of older sessions replay.
// A payload field of this type needs no JSON method of its own.
type Duration time.Duration

// Std is the duration as a time.Duration, for the clock and the SDK's options.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String is time.Duration's text ("1m30s").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the duration as text.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads text ("30m", "1h30m0s") or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("reading duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("reading duration %s: want text such as \"30m\" or nanoseconds", b)
	}
	*d = Duration(n)
	return nil
}
