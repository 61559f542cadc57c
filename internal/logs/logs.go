// Package logs is how Keel's long-running programs (the worker and the Slack bot) log: structured
// lines (key=value) on standard error, Keel's own from info and the Temporal SDK's warnings and
// errors, at the configuration key log (KEEL_LOG) when it is set. It links only the standard library and the SDK's
// log interface, so the Slack bot, which links nothing of the worker's, logs the same way.
package logs

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"

	sdklog "go.temporal.io/sdk/log"
)

// sdkDefaultLevel is the SDK's level when the key log is empty: its info lines are routine (a
// worker started, a poller stopped), its warnings are what an operator must see (the server
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

// operator is set once a program whose standard error an operator reads (the worker, the Slack
// bot) has called Operator; until then the SDK logger stays quiet, as the starter needs.
var operator atomic.Bool

// ParseLevel reads the value of the key log: debug, info, warn, error or off. Any other non-empty value
// (KEEL_LOG=1, as older docs said) means debug, the most the programs can say; false when empty.
func ParseLevel(v string) (slog.Level, bool) {
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

// Operator makes this process log structured lines to w, Keel's own from info (or level), and
// returns that logger, which is also slog's default from now on. A program calls it first, so an
// outage (polls failing, results that cannot be delivered) shows on its standard error without
// any setting; SDK loggers made afterwards write through it.
func Operator(w io.Writer, level string) *slog.Logger {
	keel := slog.LevelInfo
	if l, ok := ParseLevel(level); ok {
		keel = l
	}
	l := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: keel}))
	slog.SetDefault(l)
	operator.Store(true)
	return l
}

// SDK is the Temporal SDK's logger at level (warn when empty). In a program that called Operator
// it writes through slog's default handler; otherwise (the starter, whose terminal belongs to the
// user) it is quiet unless level is set, and then writes to standard error.
func SDK(level string) sdklog.Logger {
	l, set := ParseLevel(level)
	if !set {
		l = sdkDefaultLevel
	}
	var h slog.Handler
	switch {
	case operator.Load():
		h = slog.Default().Handler()
	case set:
		h = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})
	default:
		h = slog.NewTextHandler(io.Discard, nil)
	}
	return sdklog.NewStructuredLogger(slog.New(&sdkHandler{Handler: h, level: l}))
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
