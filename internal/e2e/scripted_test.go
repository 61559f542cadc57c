package e2e

import (
	"context"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/demo"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/jsondur"
)

// scriptedInput marks a session started by the client directly as one that asks for the scripted
// model, as the starter does with gateway.fake: a worker whose gateway is the in-process fake
// serves no other.
func scriptedInput(in contract.SessionInput) contract.SessionInput {
	in.Endpoint = &contract.Endpoint{Scripted: true}
	return in
}

// scriptedWorker is a worker process on a fake gateway of its own, with a copy of the demo project
// to work in: what a test needs to start sessions (by client or through the starter) and read
// what the model was sent. Everything it starts is stopped when the test ends.
type scriptedWorker struct {
	t  *testing.T
	gw *fakegw.Server
	// env is the worker's environment, which the starter shares to reach the same store.
	env    []string
	worker *workerProc
	// ws is the work directory, a copy of the demo project.
	ws string
}

// scriptedOptions shape a scriptedWorker; the zero value is the plain worker on a plain fake.
type scriptedOptions struct {
	gateway fakegw.Options
	// worker is the command to run, "./worker" when empty (or "./internal/devkit/recworker").
	worker string
	args   []string
	// env is added to the environment after the gateway's settings.
	env []string
}

// startScripted starts the fake gateway and the worker.
func startScripted(t *testing.T, opts scriptedOptions) *scriptedWorker {
	t.Helper()
	if opts.worker == "" {
		opts.worker = "./worker"
	}
	bin, err := env.Build(opts.worker)
	if err != nil {
		t.Fatal(err)
	}
	gw := fakegw.New(opts.gateway)
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	environ := env.StarterEnv(t, append([]string{"KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL=" + gw.BaseURL() + "/v1"}, opts.env...)...)
	ws := t.TempDir()
	if err := demo.CopyWorkspace(ws); err != nil {
		t.Fatal(err)
	}
	w := &workerProc{bin: bin, args: opts.args, env: environ, t: t}
	w.start()
	t.Cleanup(w.kill)
	return &scriptedWorker{t: t, gw: gw, env: environ, worker: w, ws: ws}
}

// start starts a session by client on the worker's task queue: the demo task in the given
// injection mode, in the work directory, with the given limits and a heartbeat timeout short
// enough for a test that kills the worker; edits change the input further before it starts.
func (s *scriptedWorker) start(ctx context.Context, mode string, limits contract.Limits, edits ...func(*contract.SessionInput)) client.WorkflowRun {
	s.t.Helper()
	in := scriptedInput(contract.SessionInput{
		Task:     fakegw.WithMode("fix the failing test", mode),
		Limits:   limits,
		Settings: contract.Settings{ToolSettings: contract.ToolSettings{Workdir: s.ws}, HeartbeatTimeout: jsondur.Duration(testHeartbeatTimeout)},
	})
	for _, e := range edits {
		e(&in)
	}
	run, err := env.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: envValue(s.env, "KEEL_TEMPORAL_TASK_QUEUE")},
		contract.SessionWorkflow, in)
	if err != nil {
		s.t.Fatal(err)
	}
	return run
}
