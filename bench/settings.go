package bench

import "go.temporal.io/sdk/worker"

// ProposedDynamicConfig is what this package's measurements propose adding to Keel's dev server
// configuration (docs/benchmarks.md, "Settings"). The dev server keeps all workflows on one history
// shard, and each shard reads its transfer queue at most history.transferProcessorMaxPollRPS times
// a second (20 by default): every workflow task, activity task and child start waits for the next
// of those reads, in 50 ms steps. Raising the cap removes the step.
var ProposedDynamicConfig = map[string]string{
	"history.transferProcessorMaxPollRPS": "10000",
}

// Setting is one server and worker configuration to measure.
type Setting struct {
	Name string
	// Dynamic is the server's whole dynamic configuration (beyond the CLI's defaults).
	Dynamic map[string]string
	// Worker replaces the worker options; nil is app.NewWorker's.
	Worker *worker.Options
	// EagerStart requests eager workflow start for every session and floor parent.
	EagerStart bool
}

// Settings are the configurations BenchmarkSettings compares, each against the same workload.
func Settings() []Setting {
	none := map[string]string{}
	keel := KeelDynamicConfig(nil)
	fast := KeelDynamicConfig(ProposedDynamicConfig)
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	return []Setting{
		{Name: "cli-defaults", Dynamic: none},
		{Name: "keel-today (eager activities)", Dynamic: keel},
		{Name: "cli-defaults + transferMaxPollRPS", Dynamic: with(none, "history.transferProcessorMaxPollRPS", "10000")},
		{Name: "keel + transferMaxPollRPS (proposed)", Dynamic: fast},
		{Name: "keel + 1 task queue partition", Dynamic: with(keel, "matching.numTaskqueueReadPartitions", "1", "matching.numTaskqueueWritePartitions", "1")},
		{Name: "proposed + 1 task queue partition", Dynamic: with(fast, "matching.numTaskqueueReadPartitions", "1", "matching.numTaskqueueWritePartitions", "1")},
		{Name: "proposed + eager workflow start", Dynamic: with(fast, "system.enableEagerWorkflowStart", "true"), EagerStart: true},
		{Name: "proposed + 10 pollers each", Dynamic: fast, Worker: &worker.Options{MaxConcurrentWorkflowTaskPollers: 10, MaxConcurrentActivityTaskPollers: 10}},
		{Name: "proposed, eager activities off in worker", Dynamic: fast, Worker: &worker.Options{DisableEagerActivities: true}},
		{Name: "keel + timer/visibility poll RPS", Dynamic: with(keel, "history.timerProcessorMaxPollRPS", "10000", "history.visibilityProcessorMaxPollRPS", "10000")},
	}
}
