package contract

import (
	"encoding/json"
	"time"

	"github.com/keelrun/keel/internal/jsondur"
)

// MarshalJSON writes MaxDuration as text.
func (l Limits) MarshalJSON() ([]byte, error) {
	type plain Limits
	return json.Marshal(struct {
		plain
		MaxDuration jsondur.Duration `json:"max_duration,omitempty"`
	}{plain(l), jsondur.Duration(l.MaxDuration)})
}

// UnmarshalJSON reads MaxDuration as text or nanoseconds.
func (l *Limits) UnmarshalJSON(b []byte) error {
	type plain Limits
	aux := struct {
		*plain
		MaxDuration jsondur.Duration `json:"max_duration,omitempty"`
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
		Base jsondur.Duration `json:"base,omitempty"`
		Cap  jsondur.Duration `json:"cap,omitempty"`
	}{plain(r), jsondur.Duration(r.Base), jsondur.Duration(r.Cap)})
}

// UnmarshalJSON reads Base and Cap as text or nanoseconds.
func (r *RetryConfig) UnmarshalJSON(b []byte) error {
	type plain RetryConfig
	aux := struct {
		*plain
		Base jsondur.Duration `json:"base,omitempty"`
		Cap  jsondur.Duration `json:"cap,omitempty"`
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
		ApprovalTimeout jsondur.Duration `json:"approval_timeout,omitempty"`
		CommandTimeout  jsondur.Duration `json:"command_timeout,omitempty"`
	}{plain(p), jsondur.Duration(p.ApprovalTimeout), jsondur.Duration(p.CommandTimeout)})
}

// UnmarshalJSON reads the policy's timeouts as text or nanoseconds.
func (p *ToolPolicy) UnmarshalJSON(b []byte) error {
	type plain ToolPolicy
	aux := struct {
		*plain
		ApprovalTimeout jsondur.Duration `json:"approval_timeout,omitempty"`
		CommandTimeout  jsondur.Duration `json:"command_timeout,omitempty"`
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
		Deadline jsondur.Duration `json:"deadline,omitempty"`
	}{plain(e), jsondur.Duration(e.Deadline)})
}

// UnmarshalJSON reads the escalation deadline as text or nanoseconds.
func (e *EscalationPolicy) UnmarshalJSON(b []byte) error {
	type plain EscalationPolicy
	aux := struct {
		*plain
		Deadline jsondur.Duration `json:"deadline,omitempty"`
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
		HeartbeatTimeout jsondur.Duration `json:"heartbeat_timeout,omitempty"`
	}{plain(in), jsondur.Duration(in.HeartbeatTimeout)})
}

// UnmarshalJSON reads HeartbeatTimeout as text or nanoseconds.
func (in *SessionInput) UnmarshalJSON(b []byte) error {
	type plain SessionInput
	aux := struct {
		*plain
		HeartbeatTimeout jsondur.Duration `json:"heartbeat_timeout,omitempty"`
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
		HeartbeatTimeout jsondur.Duration `json:"heartbeat_timeout,omitempty"`
	}{plain(in), jsondur.Duration(in.HeartbeatTimeout)})
}

// UnmarshalJSON reads HeartbeatTimeout as text or nanoseconds.
func (in *TurnInput) UnmarshalJSON(b []byte) error {
	type plain TurnInput
	aux := struct {
		*plain
		HeartbeatTimeout jsondur.Duration `json:"heartbeat_timeout,omitempty"`
	}{plain: (*plain)(in)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	in.HeartbeatTimeout = time.Duration(aux.HeartbeatTimeout)
	return nil
}
