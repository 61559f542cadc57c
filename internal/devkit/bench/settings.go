package bench

import (
	"maps"

	"go.temporal.io/sdk/worker"
)

// TransferPollRPS is the dynamic configuration key that set the 50 ms step: the dev server keeps
// all workflows on one history shard, and each shard reads its transfer queue at most this many
// times a second. Every workflow task, activity task and child start waits for the next read.
const TransferPollRPS = "history.transferProcessorMaxPollRPS"

// OldTransferPollRPS is the server's default for TransferPollRPS, which Keel's dev server ran
// with before devserver.DynamicConfig raised it; the settings benchmark keeps it side by side
// with the shipped value so the effect stays measured.
const OldTransferPollRPS = "20"

// Setting is one server and worker configuration to measure.
type Setting struct {
	Name string
	// Dynamic is the server's whole dynamic configuration (beyond the CLI's defaults).
	Dynamic map[string]string
	// Worker replaces the worker options; nil is app.NewWorker's.
	Worker *worker.Options
	// EagerStart requests eager workflow start for every session and floor parent.
	EagerStart bool
	// Shipped marks Keel's configuration as it ships, the one the others are compared with.
	Shipped bool
}

// Settings are the configurations BenchmarkSettings compares, each against the same workload.
func Settings() []Setting {
	none := map[string]string{}
	shipped := KeelDynamicConfig(nil)
	with := func(base map[string]string, kv ...string) map[string]string {
		out := maps.Clone(base)
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	return []Setting{
		{Name: "cli-defaults", Dynamic: none},
		{Name: "cli-defaults + transferMaxPollRPS=10000", Dynamic: with(none, TransferPollRPS, "10000")},
		{Name: "shipped with transferMaxPollRPS=20 (old)", Dynamic: with(shipped, TransferPollRPS, OldTransferPollRPS)},
		{Name: "shipped", Dynamic: shipped, Shipped: true},
		{Name: "shipped + 1 task queue partition", Dynamic: with(shipped, "matching.numTaskqueueReadPartitions", "1", "matching.numTaskqueueWritePartitions", "1")},
		{Name: "shipped + eager workflow start", Dynamic: with(shipped, "system.enableEagerWorkflowStart", "true"), EagerStart: true},
		{Name: "shipped + 10 pollers each", Dynamic: shipped, Worker: &worker.Options{MaxConcurrentWorkflowTaskPollers: 10, MaxConcurrentActivityTaskPollers: 10}},
		{Name: "shipped, eager activities off in worker", Dynamic: shipped, Worker: &worker.Options{DisableEagerActivities: true}},
		{Name: "shipped + timer/visibility poll RPS", Dynamic: with(shipped, "history.timerProcessorMaxPollRPS", "10000", "history.visibilityProcessorMaxPollRPS", "10000")},
	}
}
