package metrics

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// Path is where Serve exposes the metrics.
const Path = "/metrics"

// meterName names the OpenTelemetry meter every metric is created on.
const meterName = "github.com/keelrun/keel"

// TimerBuckets are the histogram boundaries, in seconds, of every timer (the SDK's latencies and
// Keel's retry waits). OpenTelemetry's default boundaries are meant for milliseconds and would put
// nearly every wait in the first bucket.
var TimerBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// Metrics owns the Prometheus registry a worker exposes and the metrics handler that feeds it.
type Metrics struct {
	reg     *prometheus.Registry
	handler client.MetricsHandler
}

// New builds a registry holding the Go runtime and process collectors plus everything recorded
// through Handler.
func New() (*Metrics, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("registering the go runtime collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("registering the process collector: %w", err)
	}
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, fmt.Errorf("creating the prometheus exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithView(timerView()))
	otelHandler := temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter: provider.Meter(meterName),
		// The default panics, which would take a worker down over a metric name.
		OnError:              func(err error) { slog.Warn("recording a metric", "error", err) },
		UseMonotonicCounters: true,
	})
	return &Metrics{reg: reg, handler: newHandler(otelHandler)}, nil
}

// timerView gives the SDK's timers (histograms in seconds) boundaries that fit seconds.
func timerView() sdkmetric.View {
	return sdkmetric.NewView(
		sdkmetric.Instrument{Kind: sdkmetric.InstrumentKindHistogram, Unit: "s"},
		sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: TimerBuckets}},
	)
}

// Handler is the metrics handler the Temporal client gets (client.Options.MetricsHandler). Every
// metric recorded through it, including from workflow code via workflow.GetMetricsHandler(ctx)
// (replay-safe) and activity.GetMetricsHandler(ctx), ends up on /metrics.
func (m *Metrics) Handler() client.MetricsHandler { return m.handler }

// Registry is the registry Serve exposes, for collectors of other parts of the worker.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// HTTPHandler answers a Prometheus scrape with the registry's contents.
func (m *Metrics) HTTPHandler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		Registry:      m.reg,
		ErrorHandling: promhttp.ContinueOnError,
	})
}
