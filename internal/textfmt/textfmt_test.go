package textfmt

import (
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0ms"},
		{850 * time.Millisecond, "850ms"},
		{time.Second, "1.0s"},
		{4240 * time.Millisecond, "4.2s"},
		{9960 * time.Millisecond, "10.0s"},
		{42 * time.Second, "42s"},
		{5*time.Minute + 22*time.Second, "5m 22s"},
		{29*time.Minute + 58*time.Second + 900*time.Millisecond, "29m 58s"},
		{2*time.Hour + 5*time.Minute, "2h 05m"},
	}
	for _, c := range cases {
		if got := Duration(c.d); got != c.want {
			t.Errorf("Duration(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestCount(t *testing.T) {
	cases := []struct {
		n    int64
		noun string
		want string
	}{
		{0, "turn", "0 turns"},
		{1, "turn", "1 turn"},
		{2, "tool call", "2 tool calls"},
		{1, "token", "1 token"},
	}
	for _, c := range cases {
		if got := Count(c.n, c.noun); got != c.want {
			t.Errorf("Count(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}

// TestCall: a call ID that says it is a call is not named "call" twice.
func TestCall(t *testing.T) {
	for id, want := range map[string]string{"call_abc": "call_abc", "7": "call 7", "toolu_01": "call toolu_01", "Call-9": "Call-9"} {
		if got := Call(id); got != want {
			t.Errorf("Call(%q) = %q, want %q", id, got, want)
		}
	}
}
