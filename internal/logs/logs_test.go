package logs

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestSDKLogs: what the SDK's logger passes at each value of the key log. Empty, a worker shows the
// SDK's warnings and a lost task result (which the SDK logs at info) as a warning, and nothing
// routine.
func TestSDKLogs(t *testing.T) {
	lines := []struct {
		level slog.Level
		msg   string
	}{
		{slog.LevelDebug, "debug line"},
		{slog.LevelInfo, "Started Worker"},
		{slog.LevelInfo, promoted[0]},
		{slog.LevelWarn, "Failed to poll for task."},
		{slog.LevelError, "error line"},
	}
	tests := []struct {
		env  string
		want []string
	}{
		{"", []string{"level=WARN msg=\"" + promoted[0], "level=WARN msg=\"Failed to poll", "level=ERROR"}},
		{"warn", []string{"level=WARN msg=\"" + promoted[0], "level=WARN msg=\"Failed to poll", "level=ERROR"}},
		{"error", []string{"level=ERROR"}},
		{"info", []string{"level=INFO msg=\"Started Worker", "level=WARN msg=\"" + promoted[0], "level=WARN msg=\"Failed to poll", "level=ERROR"}},
		{"1", []string{"level=DEBUG", "level=INFO msg=\"Started Worker", "level=WARN msg=\"" + promoted[0], "level=WARN msg=\"Failed to poll", "level=ERROR"}},
		{"off", nil},
	}
	for _, tt := range tests {
		t.Run("level="+tt.env, func(t *testing.T) {
			var buf bytes.Buffer
			prev := slog.Default()
			Operator(&buf, tt.env)
			defer func() { operator.Store(false); slog.SetDefault(prev) }()
			l := SDK(tt.env)
			for _, line := range lines {
				switch line.level {
				case slog.LevelDebug:
					l.Debug(line.msg)
				case slog.LevelInfo:
					l.Info(line.msg)
				case slog.LevelWarn:
					l.Warn(line.msg)
				default:
					l.Error(line.msg)
				}
			}
			got := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if buf.Len() == 0 {
				got = nil
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%d lines, want %d:\n%s", len(got), len(tt.want), buf.String())
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("line %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}
