package contract

import (
	"encoding/json"
	"fmt"
	"time"
)

// jsonDuration is a duration as people read it in the Web UI ("30m0s"), not as nanoseconds.
// It still reads the nanosecond numbers of sessions started before, so their histories replay.
type jsonDuration time.Duration

// MarshalJSON writes the duration as text.
func (d jsonDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads text ("30m", "1h30m0s") or a number of nanoseconds.
func (d *jsonDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("reading duration %q: %w", s, err)
		}
		*d = jsonDuration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("reading duration %s: want text such as \"30m\" or nanoseconds", b)
	}
	*d = jsonDuration(n)
	return nil
}

// MarshalJSON writes MaxDuration as text.
func (l Limits) MarshalJSON() ([]byte, error) {
	type plain Limits
	return json.Marshal(struct {
		plain
		MaxDuration jsonDuration `json:"max_duration,omitempty"`
	}{plain(l), jsonDuration(l.MaxDuration)})
}

// UnmarshalJSON reads MaxDuration as text or nanoseconds.
func (l *Limits) UnmarshalJSON(b []byte) error {
	type plain Limits
	aux := struct {
		*plain
		MaxDuration jsonDuration `json:"max_duration,omitempty"`
	}{plain: (*plain)(l)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	l.MaxDuration = time.Duration(aux.MaxDuration)
	return nil
}

// MarshalJSON writes Base and Cap as text.
func (r RetryConfig) MarshalJSON() ([]byte, error) {
	type plain RetryConfig
	return json.Marshal(struct {
		plain
		Base jsonDuration `json:"base,omitempty"`
		Cap  jsonDuration `json:"cap,omitempty"`
	}{plain(r), jsonDuration(r.Base), jsonDuration(r.Cap)})
}

// UnmarshalJSON reads Base and Cap as text or nanoseconds.
func (r *RetryConfig) UnmarshalJSON(b []byte) error {
	type plain RetryConfig
	aux := struct {
		*plain
		Base jsonDuration `json:"base,omitempty"`
		Cap  jsonDuration `json:"cap,omitempty"`
	}{plain: (*plain)(r)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	r.Base, r.Cap = time.Duration(aux.Base), time.Duration(aux.Cap)
	return nil
}

// MarshalJSON writes the policy's timeouts as text.
func (p ToolPolicy) MarshalJSON() ([]byte, error) {
	type plain ToolPolicy
	return json.Marshal(struct {
		plain
		ApprovalTimeout jsonDuration `json:"approval_timeout,omitempty"`
		CommandTimeout  jsonDuration `json:"command_timeout,omitempty"`
	}{plain(p), jsonDuration(p.ApprovalTimeout), jsonDuration(p.CommandTimeout)})
}

// UnmarshalJSON reads the policy's timeouts as text or nanoseconds.
func (p *ToolPolicy) UnmarshalJSON(b []byte) error {
	type plain ToolPolicy
	aux := struct {
		*plain
		ApprovalTimeout jsonDuration `json:"approval_timeout,omitempty"`
		CommandTimeout  jsonDuration `json:"command_timeout,omitempty"`
	}{plain: (*plain)(p)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	p.ApprovalTimeout, p.CommandTimeout = time.Duration(aux.ApprovalTimeout), time.Duration(aux.CommandTimeout)
	return nil
}

// MarshalJSON writes the escalation deadline as text.
func (e EscalationPolicy) MarshalJSON() ([]byte, error) {
	type plain EscalationPolicy
	return json.Marshal(struct {
		plain
		Deadline jsonDuration `json:"deadline,omitempty"`
	}{plain(e), jsonDuration(e.Deadline)})
}

// UnmarshalJSON reads the escalation deadline as text or nanoseconds.
func (e *EscalationPolicy) UnmarshalJSON(b []byte) error {
	type plain EscalationPolicy
	aux := struct {
		*plain
		Deadline jsonDuration `json:"deadline,omitempty"`
	}{plain: (*plain)(e)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	e.Deadline = time.Duration(aux.Deadline)
	return nil
}

// MarshalJSON writes HeartbeatTimeout as text.
func (in SessionInput) MarshalJSON() ([]byte, error) {
	type plain SessionInput
	return json.Marshal(struct {
		plain
		HeartbeatTimeout jsonDuration `json:"heartbeat_timeout,omitempty"`
	}{plain(in), jsonDuration(in.HeartbeatTimeout)})
}

// UnmarshalJSON reads HeartbeatTimeout as text or nanoseconds.
func (in *SessionInput) UnmarshalJSON(b []byte) error {
	type plain SessionInput
	aux := struct {
		*plain
		HeartbeatTimeout jsonDuration `json:"heartbeat_timeout,omitempty"`
	}{plain: (*plain)(in)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	in.HeartbeatTimeout = time.Duration(aux.HeartbeatTimeout)
	return nil
}

// MarshalJSON writes HeartbeatTimeout as text.
func (in TurnInput) MarshalJSON() ([]byte, error) {
	type plain TurnInput
	return json.Marshal(struct {
		plain
		HeartbeatTimeout jsonDuration `json:"heartbeat_timeout,omitempty"`
	}{plain(in), jsonDuration(in.HeartbeatTimeout)})
}

// UnmarshalJSON reads HeartbeatTimeout as text or nanoseconds.
func (in *TurnInput) UnmarshalJSON(b []byte) error {
	type plain TurnInput
	aux := struct {
		*plain
		HeartbeatTimeout jsonDuration `json:"heartbeat_timeout,omitempty"`
	}{plain: (*plain)(in)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	in.HeartbeatTimeout = time.Duration(aux.HeartbeatTimeout)
	return nil
}
