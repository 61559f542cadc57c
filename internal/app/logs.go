package app

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"

	sdklog "go.temporal.io/sdk/log"
)

// LogEnv names the environment variable that sets how much Keel's programs log: debug, info,
// warn, error or off. Unset, a worker logs Keel's own lines from info and the Temporal SDK's
// from warn; the starter logs nothing of the SDK's, because its terminal belongs to the user.
const LogEnv = "KEEL_LOG"

// sdkDefaultLevel is the SDK's level when KEEL_LOG is unset: its info lines are routine
// (a worker started, a poller stopped), its warnings are what an operator must see (the server
// cannot be reached, a task failed).
const sdkDefaultLevel = slog.LevelWarn

// levelOff is above every level slog defines, so nothing passes it.
const levelOff = slog.Level(100)

// promoted are the SDK's own messages that it logs at info but an operator must see: a task
// whose result could not be reported to the server (an activity's completion lost in an outage
// among them) is not routine.
var promoted = []string{
	"Task processing failed with error",
	"Task processing failed with client side error",
}

// operatorLogs is set once a program whose standard error an operator reads (the worker) has
// called OperatorLogs; until then the SDK logger stays quiet, as the starter needs.
var operatorLogs atomic.Bool

// parseLevel reads KEEL_LOG. Any other non-empty value (KEEL_LOG=1, as older docs said) means
// debug, the most the programs can say.
func parseLevel(v string) (slog.Level, bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "":
		return 0, false
	case "off", "none":
		return levelOff, true
	case "error":
		return slog.LevelError, true
	case "warn", "warning":
		return slog.LevelWarn, true
	case "info":
		return slog.LevelInfo, true
	default:
		return slog.LevelDebug, true
	}
}

// OperatorLogs makes this process log structured lines (key=value) to w: Keel's own from info,
// the SDK's warnings and errors, both at KEEL_LOG's level when it is set. The worker calls it
// first, so an outage (polls failing, results that cannot be delivered) shows on its standard
// error without any setting.
func OperatorLogs(w io.Writer) {
	keel := slog.LevelInfo
	if l, ok := parseLevel(os.Getenv(LogEnv)); ok {
		keel = l
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: keel})))
	operatorLogs.Store(true)
}

// Logger is the Temporal SDK's logger. In a program that called OperatorLogs it writes through
// slog's default handler from warn (or KEEL_LOG's level); otherwise (the starter) it is quiet
// unless verbose (KEEL_LOG is set), and then writes to standard error.
func Logger(verbose bool) sdklog.Logger {
	level, set := parseLevel(os.Getenv(LogEnv))
	if !set {
		level = sdkDefaultLevel
	}
	var h slog.Handler
	switch {
	case operatorLogs.Load():
		h = slog.Default().Handler()
	case verbose:
		h = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})
	default:
		h = slog.NewTextHandler(io.Discard, nil)
	}
	return sdklog.NewStructuredLogger(slog.New(&sdkHandler{Handler: h, level: level}))
}

// sdkHandler filters the SDK's records at its own level and raises the promoted messages to
// warnings.
type sdkHandler struct {
	slog.Handler
	level slog.Level
}

// Enabled lets info through when promoted messages could be raised; Handle filters the rest.
func (h *sdkHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return (l >= h.level || (l == slog.LevelInfo && h.level <= slog.LevelWarn)) && h.Handler.Enabled(ctx, max(l, h.level))
}

// Handle raises a promoted message to a warning and drops what is below the level.
func (h *sdkHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo && isPromoted(r.Message) {
		r.Level = slog.LevelWarn
	}
	if r.Level < h.level {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs keeps the filter on a logger with more attributes.
func (h *sdkHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &sdkHandler{Handler: h.Handler.WithAttrs(as), level: h.level}
}

// WithGroup keeps the filter on a logger with a group.
func (h *sdkHandler) WithGroup(name string) slog.Handler {
	return &sdkHandler{Handler: h.Handler.WithGroup(name), level: h.level}
}

func isPromoted(msg string) bool {
	for _, p := range promoted {
		if msg == p {
			return true
		}
	}
	return false
}
