// Package jsondur holds the duration that Keel's workflow inputs write as text. Inputs show in
// the Web UI, where "30m0s" reads and 1800000000000 does not; it is a leaf package so the contract
// and the breaker (which the contract imports) can share it.
package jsondur

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a duration written as text ("30m0s"). It still reads the nanosecond numbers of
// inputs written before, so the histories of older sessions replay.
type Duration time.Duration

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
