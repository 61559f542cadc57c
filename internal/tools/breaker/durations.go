package breaker

import (
	"encoding/json"
	"fmt"
	"time"
)

// jsonDuration is a duration as people read it in the Web UI ("2m0s"), not as nanoseconds. It
// still reads the nanosecond numbers of sessions started before, so their histories replay. The
// contract package has the same type for its own durations; this package imports nothing of
// Keel's, so it keeps its own.
type jsonDuration time.Duration

// MarshalJSON writes the duration as text.
func (d jsonDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads text ("2m", "1m30s") or a number of nanoseconds.
func (d *jsonDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("reading breaker duration %q: %w", s, err)
		}
		*d = jsonDuration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("reading breaker duration %s: want text such as \"2m\" or nanoseconds", b)
	}
	*d = jsonDuration(n)
	return nil
}

// MarshalJSON writes Window and Cooldown as text, so a session's input reads "2m0s", not
// 120000000000.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
	return json.Marshal(struct {
		plain
		Window   jsonDuration `json:"window,omitempty"`
		Cooldown jsonDuration `json:"cooldown,omitempty"`
	}{plain(c), jsonDuration(c.Window), jsonDuration(c.Cooldown)})
}

// UnmarshalJSON reads Window and Cooldown as text or nanoseconds.
func (c *Config) UnmarshalJSON(b []byte) error {
	type plain Config
	aux := struct {
		*plain
		Window   jsonDuration `json:"window,omitempty"`
		Cooldown jsonDuration `json:"cooldown,omitempty"`
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	c.Window, c.Cooldown = time.Duration(aux.Window), time.Duration(aux.Cooldown)
	return nil
}
