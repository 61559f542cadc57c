package metrics

import (
	"context"
	"github.com/keelrun/keel/internal/metrics/record"
	"log/slog"

	otelmetric "go.opentelemetry.io/otel/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// upDown names the counters that may go down. The SDK's handler makes every counter monotonic
// (so Prometheus sees _total counters), which forbids negative increments; these few are sums
// exported as gauges instead.
var upDown = map[string]bool{
	record.EscalationsOpen: true,
}

// handler is the SDK's OpenTelemetry handler with up/down counters for the names in upDown.
type handler struct {
	otel temporalotel.MetricsHandler
}

var _ client.MetricsHandler = handler{}

func newHandler(h temporalotel.MetricsHandler) handler { return handler{otel: h} }

// WithTags returns a handler whose metrics carry tags in addition to this one's.
func (h handler) WithTags(tags map[string]string) client.MetricsHandler {
	th, ok := h.otel.WithTags(tags).(temporalotel.MetricsHandler)
	if !ok {
		// The contrib handler always returns its own type; anything else is a new SDK version.
		return h.otel.WithTags(tags)
	}
	return handler{otel: th}
}

// Counter returns the named counter; names in upDown may be given negative increments.
func (h handler) Counter(name string) client.MetricsCounter {
	if !upDown[name] {
		return h.otel.Counter(name)
	}
	c, err := h.otel.GetMeter().Int64UpDownCounter(name)
	if err != nil {
		slog.Warn("recording a metric", "name", name, "error", err)
		return client.MetricsNopHandler.Counter(name)
	}
	attrs := otelmetric.WithAttributeSet(h.otel.GetAttributes())
	return counterFunc(func(d int64) { c.Add(context.Background(), d, attrs) })
}

// Gauge returns the named gauge.
func (h handler) Gauge(name string) client.MetricsGauge { return h.otel.Gauge(name) }

// Timer returns the named timer, a histogram in seconds.
func (h handler) Timer(name string) client.MetricsTimer { return h.otel.Timer(name) }

// Unwrap gives the SDK's handler, so temporalotel.ExtractMetricsHandler finds it.
func (h handler) Unwrap() client.MetricsHandler { return h.otel }

// counterFunc adapts a function to client.MetricsCounter.
type counterFunc func(int64)

// Inc adds d.
func (f counterFunc) Inc(d int64) { f(d) }
