package cli

import (
	"testing"
	"time"

	"github.com/keelrun/keel/internal/config"
)

// TestUILink: a session's link follows temporal.ui_url, and where no Web UI runs (ui_url off, as
// the native cluster sets it) there is none, rather than one to a port nothing listens on.
func TestUILink(t *testing.T) {
	tests := []struct {
		ui, want string
	}{
		{"http://127.0.0.1:8233", "http://127.0.0.1:8233/namespaces/default/workflows/wf-1"},
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.ui, func(t *testing.T) {
			cfg := config.Config{Temporal: config.Temporal{UIURL: tt.ui, Namespace: "default"}}
			if got := uiLink(cfg, "wf-1"); got != tt.want {
				t.Fatalf("uiLink = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSessionInputHeartbeatTimeout: temporal.heartbeat_timeout reaches the session's input, where
// the workflows read it; unset, the input leaves it to their default.
func TestSessionInputHeartbeatTimeout(t *testing.T) {
	for _, d := range []time.Duration{0, 15 * time.Second} {
		cfg := config.Config{Temporal: config.Temporal{HeartbeatTimeout: d}}
		if got := sessionInput(cfg, sessionSpec{task: "t"}).HeartbeatTimeout.Std(); got != d {
			t.Errorf("heartbeat timeout %s in the input, want %s", got, d)
		}
	}
}
