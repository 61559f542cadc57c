package bench

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/devkit/devserver"
)

// actionTurns is the length of the sessions BenchmarkActionsPerTurn measures: four tool turns and
// the final answer.
const actionTurns = 4

// costPerMillion is Temporal Cloud's published price of a million actions, in dollars.
const costPerMillion = 50.0

// actionCase is one shape of turn: how long the model streams and what command the tool runs.
type actionCase struct {
	name    string
	stream  time.Duration
	command string
	cmdTime time.Duration
}

var actionCases = []actionCase{
	{name: "0s model, 0s tool", stream: 0},
	{name: "3s streamed model, 2s command", stream: 3 * time.Second, command: "sleep 2", cmdTime: 2 * time.Second},
	{name: "12s streamed model, no command", stream: 12 * time.Second},
}

// watcherCounts are the numbers of watchers BenchmarkActionsPerTurn measures the 3 s model and 2 s
// command shape with, besides the attached starter (one).
var watcherCounts = []int{1, 5, 20}

// BenchmarkActionsPerTurn counts what a turn costs in Temporal actions, read from the server's own
// `action` counter, at three turn shapes, on Keel's server as it ships (worker commands on: the
// server pushes cancellation, heartbeats prove liveness only) and on the same server with worker
// commands off (the worker falls back to heartbeating every 200 ms). It also counts heartbeat
// RPCs per minute of running activity, and prices a turn at $50 per million actions. On the shipped
// server each shape runs a second time through the shipped starter binary, attached to the session
// until it ends, to count what a watching terminal adds, and the 3 s model and 2 s command shape
// with 1, 5 and 20 watchers following it in-process (runWatched).
func BenchmarkActionsPerTurn(b *testing.B) {
	servers := []struct {
		name string
		dyn  map[string]string
		// attached also runs each shape through the shipped starter, attached until the end.
		attached bool
	}{
		{"worker commands", KeelDynamicConfig(nil), true},
		{"no worker commands", withoutWorkerCommands(), false},
	}
	starter := buildStarter(b)
	for _, sv := range servers {
		b.Run(strings.ReplaceAll(sv.name, " ", "-"), func(b *testing.B) {
			ctx := benchContext(b)
			srv := startServer(b, ctx, sv.dyn)
			var rpcs RPCs
			rig := startRig(b, srv, RigOptions{ToolTurns: actionTurns, RPCs: &rpcs})
			if _, _, err := rig.RunSession(ctx, uniq("warm"), uniq("warm")); err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
				for _, c := range actionCases {
					rig.Model.StreamFor, rig.Model.Command = c.stream, c.command
					before, err := SettledActions(ctx, srv.MetricsURL())
					if err != nil {
						b.Fatal(err)
					}
					rpcs.Take()
					_, d, err := rig.RunSession(ctx, uniq("actions"), uniq("task"))
					if err != nil {
						b.Fatal(err)
					}
					beats := len(rpcs.Take()["RecordActivityTaskHeartbeat"])
					after, err := SettledActions(ctx, srv.MetricsURL())
					if err != nil {
						b.Fatal(err)
					}
					reportActions(b, sv.name, c, after.Sub(before), beats, d)
					if !sv.attached {
						continue
					}
					rpcs.Take()
					d = runAttached(ctx, b, starter, srv, rig, uniq("attached"))
					beats = len(rpcs.Take()["RecordActivityTaskHeartbeat"])
					attached, err := SettledActions(ctx, srv.MetricsURL())
					if err != nil {
						b.Fatal(err)
					}
					reportActions(b, sv.name+", starter attached", c, attached.Sub(after), beats, d)
					if c.stream != 3*time.Second {
						continue
					}
					for _, n := range watcherCounts {
						from, err := SettledActions(ctx, srv.MetricsURL())
						if err != nil {
							b.Fatal(err)
						}
						rpcs.Take()
						d = runWatched(ctx, b, rig, n, uniq("watched"))
						beats = len(rpcs.Take()["RecordActivityTaskHeartbeat"])
						to, err := SettledActions(ctx, srv.MetricsURL())
						if err != nil {
							b.Fatal(err)
						}
						reportActions(b, fmt.Sprintf("%s, %d watchers", sv.name, n), c, to.Sub(from), beats, d)
					}
				}
			}
		})
	}
}

func reportActions(b *testing.B, server string, c actionCase, got Actions, beats int, d time.Duration) {
	turns := float64(actionTurns + 1)
	perTurn := got.Total / turns
	running := (time.Duration(actionTurns+1)*c.stream + time.Duration(actionTurns)*c.cmdTime).Minutes()
	perMinute := "-"
	if running > 0 {
		perMinute = fmt.Sprintf("%.1f", float64(beats)/running)
	}
	var types []string
	for _, k := range slices.Sorted(maps.Keys(got.ByType)) {
		types = append(types, fmt.Sprintf("%s=%.0f", k, got.ByType[k]))
	}
	b.Logf("%s | %s: %.2f actions per turn (%.0f in %d turns, session %.1fs), %d heartbeat RPCs (%s per running activity-minute), $%.5f per 1,000 turns; %s",
		server, c.name, perTurn, got.Total, actionTurns+1, d.Seconds(), beats, perMinute, perTurn*1000*costPerMillion/1e6, strings.Join(types, " "))
	b.ReportMetric(perTurn, strings.NewReplacer(" ", "_", ",", "").Replace(server+"/"+c.name)+"_actions/turn")
}

// withoutWorkerCommands is Keel's dev server configuration with worker commands switched off.
func withoutWorkerCommands() map[string]string {
	dyn := maps.Clone(devserver.DynamicConfig)
	dyn["system.enableCancelActivityWorkerCommand"] = "false"
	dyn["frontend.WorkerCommandsEnabled"] = "false"
	return dyn
}
