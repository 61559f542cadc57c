package app

import (
	"context"
	"log/slog"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/activities"
)

// Heartbeats is how a worker's activities heartbeat on the server it talks to.
type Heartbeats struct {
	// PushCancel says the server pushes activity cancellation to the worker that runs the
	// activity (worker commands), so heartbeats need only prove the worker is alive.
	PushCancel bool
	// Every is how often a running model call or tool heartbeats (at least three times per
	// heartbeat timeout).
	Every time.Duration
}

// Throttle is the worker's MaxHeartbeatThrottleInterval: the longest the SDK holds a recorded
// heartbeat back. Activities record heartbeats only at their own cadence (and once at a stream's
// first delta), so it need not hold any long.
func (h Heartbeats) Throttle() time.Duration {
	return min(h.Every, pushThrottle)
}

// pushThrottle bounds the SDK's hold on a heartbeat when cadences are long.
const pushThrottle = time.Second

// capabilityTimeout bounds the namespace look-up at worker start.
const capabilityTimeout = 5 * time.Second

// ChooseHeartbeats asks the server whether it pushes cancellation (the namespace's worker_commands
// capability, which the server's frontend.WorkerCommandsEnabled turns on; the push itself also
// needs system.enableCancelActivityWorkerCommand). With it, activities heartbeat every
// activities.LivenessHeartbeat; without it (or when the namespace cannot be described) they fall
// back to fallback, and the worker says so in one line.
func ChooseHeartbeats(ctx context.Context, c client.Client, namespace string, fallback time.Duration) Heartbeats {
	if fallback <= 0 {
		fallback = activities.FallbackHeartbeat
	}
	ctx, cancel := context.WithTimeout(ctx, capabilityTimeout)
	defer cancel()
	resp, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
	if err != nil {
		slog.Warn("could not ask the server whether it pushes activity cancellation; heartbeating at the fallback cadence",
			"namespace", namespace, "every", fallback, "error", err)
		return Heartbeats{Every: fallback}
	}
	caps := resp.GetNamespaceInfo().GetCapabilities()
	if !caps.GetWorkerCommands() || !caps.GetWorkerHeartbeats() {
		slog.Warn("the Temporal server does not push activity cancellation (no worker commands); running activities heartbeat at the fallback cadence so a cancel still arrives quickly",
			"namespace", namespace, "every", fallback)
		return Heartbeats{Every: fallback}
	}
	return Heartbeats{PushCancel: true, Every: activities.LivenessHeartbeat}
}
