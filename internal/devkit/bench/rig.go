package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"google.golang.org/grpc"

	"github.com/keelrun/keel/activities"
	"github.com/keelrun/keel/internal/app"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/jsondur"
	"github.com/keelrun/keel/internal/store"
)

// RigOptions shape one in-process worker.
type RigOptions struct {
	// TaskQueue the worker polls; it must be unique per rig on a server.
	TaskQueue string
	// ToolTurns is how many tool turns each session's scripted model asks for.
	ToolTurns int
	// Dir holds the transcript store and the sessions' work directory.
	Dir string
	// Worker, when non-nil, replaces app.NewWorker's options (to compare worker settings), keeping
	// its heartbeat cadence; nil uses app.NewWorker exactly as the worker process does.
	Worker *worker.Options
	// EagerStart asks the server to hand each new session's first workflow task straight to
	// this worker (needs system.enableEagerWorkflowStart on the server).
	EagerStart bool
	// Store, when set, wraps the transcript store, outside the worker's cache (to time what
	// CallModel sees).
	Store func(store.Store) store.Store
	// RPCs, when set, records the calls the rig's client and worker make to the server.
	RPCs *RPCs
	// HeartbeatTimeout is the sessions' SessionInput.HeartbeatTimeout; 0 keeps the workflows'
	// default.
	HeartbeatTimeout time.Duration
}

// TranscriptCache is how many transcripts the bench worker keeps in memory, the bound the worker
// process uses (app.Activities), so the benchmarks measure the store as Keel ships it.
const TranscriptCache = 1024

// Rig is an in-process Keel worker, plus the floor workflows, on one task queue.
type Rig struct {
	Client client.Client
	Model  *Scripted
	Stamps *Stamps
	// FloorStamps times the floor's turns the way Stamps times Keel's.
	FloorStamps *Stamps
	Workdir     string
	opts        RigOptions
	w           worker.Worker
}

// NewRig connects to the server at address and builds and starts the worker. It registers Keel's
// workflows and activities with a Scripted model, and the floor workflows next to them. The client
// is dialled the way app.DialWithMetrics does it: large payloads go to the rig's store.
func NewRig(ctx context.Context, address string, opts RigOptions) (*Rig, error) {
	cfg, err := config.Load("", nil, map[string]any{
		config.GatewayFake:       true,
		config.TemporalAddress:   address,
		config.TemporalTaskQueue: opts.TaskQueue,
	})
	if err != nil {
		return nil, fmt.Errorf("loading the bench configuration: %w", err)
	}
	st, err := store.OpenFile(filepath.Join(opts.Dir, "store"))
	if err != nil {
		return nil, err
	}
	c, err := dialRig(ctx, address, st, opts.RPCs)
	if err != nil {
		return nil, err
	}
	var s store.Store = store.WithCache(st, TranscriptCache)
	if opts.Store != nil {
		s = opts.Store(s)
	}
	workdir := filepath.Join(opts.Dir, "work")
	if err := seedWorkdir(workdir); err != nil {
		c.Close()
		return nil, err
	}
	stamps := NewStamps()
	model := &Scripted{ToolTurns: opts.ToolTurns, OnCall: stamps.Record}
	acts := &activities.Activities{Models: activities.Solo(model), Store: s}

	var w worker.Worker
	if opts.Worker == nil {
		w = app.NewWorker(c, cfg, acts)
	} else {
		hb := app.ChooseHeartbeats(ctx, c, "default", 0)
		w = app.NewWorkerWith(c, opts.TaskQueue, *opts.Worker, hb, acts)
	}
	floorStamps := NewStamps()
	RegisterFloor(w, floorStamps)
	if err := w.Start(); err != nil {
		c.Close()
		return nil, fmt.Errorf("starting the bench worker: %w", err)
	}
	return &Rig{Client: c, Model: model, Stamps: stamps, FloorStamps: floorStamps, Workdir: workdir, opts: opts, w: w}, nil
}

// seedWorkdir gives list_dir something to list.
func seedWorkdir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating the work directory: %w", err)
	}
	for _, name := range []string{"main.go", "README.md", "go.mod"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("package main\n"), 0o644); err != nil {
			return fmt.Errorf("seeding the work directory: %w", err)
		}
	}
	return nil
}

// Stop stops the worker and closes its client.
func (r *Rig) Stop() {
	r.w.Stop()
	r.Client.Close()
}

// dialRig connects a client with the worker process's payload storage, recording its calls in
// rpcs when set.
func dialRig(ctx context.Context, address string, blobs store.Blobs, rpcs *RPCs) (client.Client, error) {
	opts := client.Options{
		HostPort:        address,
		Namespace:       "default",
		Logger:          quietLogger(),
		ExternalStorage: store.ExternalStorage(blobs),
	}
	if rpcs != nil {
		opts.ConnectionOptions.DialOptions = []grpc.DialOption{grpc.WithChainUnaryInterceptor(rpcs.Intercept)}
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("connecting the bench client to %s: %w", address, err)
	}
	return c, nil
}

func (r *Rig) startOptions(id string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{ID: id, TaskQueue: r.opts.TaskQueue, EnableEagerStart: r.opts.EagerStart}
}

// StartSession starts one AgentSession with the given task (unique per session: the scripted
// model keys its stamps by it).
func (r *Rig) StartSession(ctx context.Context, id, task string) (client.WorkflowRun, error) {
	return r.StartSessionWith(ctx, id, task, contract.Limits{MaxTurns: r.opts.ToolTurns + 5})
}

// StartSessionWith starts one AgentSession with the given limits (a tree's parent needs turns for
// its sub-agents and a delegation depth).
func (r *Rig) StartSessionWith(ctx context.Context, id, task string, limits contract.Limits) (client.WorkflowRun, error) {
	in := contract.SessionInput{Task: task, Limits: limits}
	in.Workdir, in.HeartbeatTimeout = r.Workdir, jsondur.Duration(r.opts.HeartbeatTimeout)
	run, err := r.Client.ExecuteWorkflow(ctx, r.startOptions(id), contract.SessionWorkflow, in)
	if err != nil {
		return nil, fmt.Errorf("starting session %s: %w", id, err)
	}
	return run, nil
}

// RunSession runs one session to its end and checks that it completed with every turn.
func (r *Rig) RunSession(ctx context.Context, id, task string) (contract.Summary, time.Duration, error) {
	start := time.Now()
	run, err := r.StartSession(ctx, id, task)
	if err != nil {
		return contract.Summary{}, 0, err
	}
	sum, err := WaitSession(ctx, run, r.opts.ToolTurns)
	return sum, time.Since(start), err
}

// WaitSession waits for a session and checks it completed after every tool turn plus the answer.
func WaitSession(ctx context.Context, run client.WorkflowRun, toolTurns int) (contract.Summary, error) {
	var sum contract.Summary
	if err := run.Get(ctx, &sum); err != nil {
		if ended, ok := contract.EndedSummary(err); ok {
			sum = ended
		} else {
			return sum, fmt.Errorf("waiting for session %s: %w", run.GetID(), err)
		}
	}
	if sum.Status != contract.StatusCompleted || sum.Turns != toolTurns+1 || sum.ToolCalls != toolTurns {
		return sum, fmt.Errorf("session %s ended %s after %d turns and %d tool calls, want completed after %d and %d",
			run.GetID(), sum.Status, sum.Turns, sum.ToolCalls, toolTurns+1, toolTurns)
	}
	return sum, nil
}

// StartFloor starts one floor parent with turns children.
func (r *Rig) StartFloor(ctx context.Context, id string, turns int) (client.WorkflowRun, error) {
	run, err := r.Client.ExecuteWorkflow(ctx, r.startOptions(id), FloorParentWorkflow, turns)
	if err != nil {
		return nil, fmt.Errorf("starting floor %s: %w", id, err)
	}
	return run, nil
}

// RunFloor runs one floor parent to its end.
func (r *Rig) RunFloor(ctx context.Context, id string, turns int) (time.Duration, error) {
	start := time.Now()
	run, err := r.StartFloor(ctx, id, turns)
	if err != nil {
		return 0, err
	}
	if err := WaitFloor(ctx, run, turns); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// WaitFloor waits for a floor parent and checks it ran every turn.
func WaitFloor(ctx context.Context, run client.WorkflowRun, turns int) error {
	var done int
	if err := run.Get(ctx, &done); err != nil {
		return fmt.Errorf("waiting for floor %s: %w", run.GetID(), err)
	}
	if done != turns {
		return fmt.Errorf("floor %s ran %d turns, want %d", run.GetID(), done, turns)
	}
	return nil
}
