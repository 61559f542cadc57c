package contract

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/jsondur"
	"github.com/keelrun/keel/internal/tools/breaker"
)

// TestSessionInputDurationsReadable: the durations of a session's input are text in its JSON (as
// the Web UI shows it), and input written as nanoseconds by older starters still reads the same.
func TestSessionInputDurationsReadable(t *testing.T) {
	in := SessionInput{
		Task:       "t",
		Limits:     Limits{MaxTurns: 3, MaxDuration: jsondur.Duration(30 * time.Minute), MaxTokens: 100},
		Escalation: EscalationPolicy{Deadline: jsondur.Duration(time.Hour), DefaultAction: ActionAbort},
	}
	in.Retry = RetryConfig{Base: jsondur.Duration(400 * time.Millisecond), Cap: jsondur.Duration(8 * time.Second)}
	in.Policy = ToolPolicy{Approval: "writes", ApprovalTimeout: jsondur.Duration(10 * time.Minute), ToolLimits: ToolLimits{CommandTimeout: jsondur.Duration(2 * time.Minute)}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"max_duration":"30m0s"`, `"base":"400ms"`, `"cap":"8s"`, `"approval_timeout":"10m0s"`,
		`"command_timeout":"2m0s"`, `"deadline":"1h0m0s"`, `"max_turns":3`, `"approval":"writes"`, `"default_action":"abort"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the input JSON lacks %s: %s", want, b)
		}
	}
	if strings.Contains(string(b), "1800000000000") {
		t.Errorf("a duration is still nanoseconds: %s", b)
	}
	cases := []struct {
		name string
		js   string
	}{
		{"text", string(b)},
		{"nanoseconds", `{"task":"t","limits":{"max_turns":3,"max_duration":1800000000000,"max_tokens":100},` +
			`"retry":{"base":400000000,"cap":8000000000},"policy":{"approval":"writes","approval_timeout":600000000000,"command_timeout":120000000000},` +
			`"escalation":{"deadline":3600000000000,"default_action":"abort"},"workdir":""}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got SessionInput
			if err := json.Unmarshal([]byte(c.js), &got); err != nil {
				t.Fatal(err)
			}
			if got.Limits != in.Limits || got.Retry != in.Retry || got.Policy.ApprovalTimeout != in.Policy.ApprovalTimeout ||
				got.Policy.CommandTimeout != in.Policy.CommandTimeout || got.Policy.Approval != "writes" ||
				got.Escalation.Deadline != in.Escalation.Deadline || got.Escalation.DefaultAction != ActionAbort {
				t.Fatalf("read back %+v", got)
			}
		})
	}
	var l Limits
	if err := json.Unmarshal([]byte(`{"max_duration":"thirty minutes"}`), &l); err == nil || !strings.Contains(err.Error(), "thirty minutes") {
		t.Fatalf("a bad duration was not refused by name: %v", err)
	}
}

// TestBreakerAndHeartbeatDurationsReadable: the circuit breaker's window and cooldown and the
// heartbeat timeout read as text in a session's input and a turn's input, and the nanoseconds of
// older inputs still read the same, so their histories replay.
func TestBreakerAndHeartbeatDurationsReadable(t *testing.T) {
	br := breaker.Config{Failures: 5, Window: jsondur.Duration(2 * time.Minute), Cooldown: jsondur.Duration(time.Minute)}
	set := Settings{ToolSettings: ToolSettings{Policy: ToolPolicy{Breaker: br}}, HeartbeatTimeout: jsondur.Duration(9 * time.Second)}
	in := SessionInput{Task: "t", Settings: set}
	turn := TurnInput{SessionID: "s", Settings: set}
	cases := []struct {
		name string
		v    any
		old  string
		back func([]byte) (breaker.Config, time.Duration, error)
	}{
		{"session", in,
			`{"task":"t","workdir":"","policy":{"breaker":{"failures":5,"window":120000000000,"cooldown":60000000000}},"heartbeat_timeout":9000000000}`,
			func(b []byte) (breaker.Config, time.Duration, error) {
				var got SessionInput
				err := json.Unmarshal(b, &got)
				return got.Policy.Breaker, got.HeartbeatTimeout.Std(), err
			}},
		{"turn", turn,
			`{"session_id":"s","turn":0,"workdir":"","policy":{"breaker":{"failures":5,"window":120000000000,"cooldown":60000000000}},"heartbeat_timeout":9000000000}`,
			func(b []byte) (breaker.Config, time.Duration, error) {
				var got TurnInput
				err := json.Unmarshal(b, &got)
				return got.Policy.Breaker, got.HeartbeatTimeout.Std(), err
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(c.v)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{`"window":"2m0s"`, `"cooldown":"1m0s"`, `"failures":5`, `"heartbeat_timeout":"9s"`} {
				if !strings.Contains(string(b), want) {
					t.Errorf("the JSON lacks %s: %s", want, b)
				}
			}
			for _, js := range []string{string(b), c.old} {
				gotBr, gotHB, err := c.back([]byte(js))
				if err != nil || gotBr != br || gotHB != 9*time.Second {
					t.Fatalf("read back %+v, %s, %v from %s", gotBr, gotHB, err, js)
				}
			}
		})
	}
}
