package bench

import (
	"fmt"
	"testing"
	"time"
)

// heartbeatTimeouts are the session heartbeat timeouts BenchmarkHeartbeatTimeout compares: the
// workflows' default and two shorter ones (9 s is what the integration tests that kill workers use).
var heartbeatTimeouts = []time.Duration{45 * time.Second, 15 * time.Second, 9 * time.Second}

// heartbeatCases are turn shapes whose activities run long enough to heartbeat at the shorter
// timeouts: a short command and a long one (a long model call beats at the same cadence).
var heartbeatCases = []actionCase{
	{name: "3s streamed model, 2s command", stream: 3 * time.Second, command: "sleep 2", cmdTime: 2 * time.Second},
	{name: "1s streamed model, 12s command", stream: time.Second, command: "sleep 12", cmdTime: 12 * time.Second},
}

// BenchmarkHeartbeatTimeout is the trade of a shorter heartbeat timeout: with worker commands a
// running model call or tool beats every min(15 s, timeout/3), so a dead worker is noticed within
// the timeout (between two thirds of it and all of it after the kill) at the price of more
// heartbeat actions per turn. It counts both, per timeout and turn shape, on Keel's server as it
// ships.
func BenchmarkHeartbeatTimeout(b *testing.B) {
	ctx := benchContext(b)
	srv := startServer(b, ctx, KeelDynamicConfig(nil))
	for _, hb := range heartbeatTimeouts {
		b.Run(fmt.Sprintf("timeout-%s", hb), func(b *testing.B) {
			var rpcs RPCs
			rig := startRig(b, srv, RigOptions{ToolTurns: actionTurns, RPCs: &rpcs, HeartbeatTimeout: hb})
			for i := 0; i < b.N; i++ {
				for _, c := range heartbeatCases {
					rig.Model.StreamFor, rig.Model.Command = c.stream, c.command
					before, err := SettledActions(ctx, srv.MetricsURL())
					if err != nil {
						b.Fatal(err)
					}
					rpcs.Take()
					_, d, err := rig.RunSession(ctx, uniq("heartbeat"), uniq("task"))
					if err != nil {
						b.Fatal(err)
					}
					beats := len(rpcs.Take()["RecordActivityTaskHeartbeat"])
					after, err := SettledActions(ctx, srv.MetricsURL())
					if err != nil {
						b.Fatal(err)
					}
					reportActions(b, fmt.Sprintf("heartbeat timeout %s", hb), c, after.Sub(before), beats, d)
				}
			}
		})
	}
}
