// Package metrics exposes a worker's metrics to Prometheus: the Temporal SDK's own metrics and
// Keel's, both recorded through the SDK's metrics handler so that workflow code can record them
// replay-safely through workflow.GetMetricsHandler(ctx) and activity code through
// activity.GetMetricsHandler(ctx).
//
// The handler is the SDK's OpenTelemetry handler (go.temporal.io/sdk/contrib/opentelemetry) on a
// meter provider whose only reader is the OpenTelemetry Prometheus exporter, registered on a
// private prometheus.Registry that Serve exposes at /metrics.
//
// # Names on /metrics
//
// The exporter turns OpenTelemetry names into Prometheus names: counters end in _total, timers
// (histograms in seconds) end in _seconds and appear as _bucket, _sum and _count series, gauges
// keep their name. A suffix that is already present is not added twice, so Keel's constants below
// are exactly the names a scrape shows:
//
//	keel_model_attempts_total{class,outcome}      counter
//	keel_model_retries_total{class}               counter
//	keel_model_retry_wait_seconds{class}          histogram (_bucket, _sum, _count)
//	keel_tool_calls_total{tool,outcome}           counter
//	keel_breaker_open{key}                        gauge, 0 or 1
//	keel_limits_tripped_total{limit}              counter
//	keel_escalations_total{reason}                counter
//	keel_escalations_open                         gauge (an up/down sum)
//	keel_tokens_total{kind}                       counter, kind is input or output
//
// The SDK's metrics get the same treatment: the SDK's temporal_workflow_completed counter appears
// as temporal_workflow_completed_total, its temporal_activity_execution_latency timer as
// temporal_activity_execution_latency_seconds_bucket and so on. Every series recorded through the
// SDK also carries the tags the SDK adds: client_name, namespace, task_queue, worker_type,
// workflow_type and activity_type, with "none" where a tag does not apply (activity_type in
// workflow code, for instance). Timers use the boundaries in TimerBuckets.
//
// keel_escalations_open is counted up when an escalation is raised and down when it is answered,
// in whichever worker runs that workflow task, and workflow metrics are not recorded again on
// replay. One worker's value can therefore be off (even negative) after sessions move between
// workers; sum(keel_escalations_open) over all workers is the number of open escalations.
package metrics
