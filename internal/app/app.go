// Package app owns Keel's wiring: the Temporal client, the worker with its workflows and
// activities, and the local dev stack (dev server and fake gateway). The worker and starter mains
// stay thin by calling it, and the integration tests reuse exactly the same code.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/activities"
	"github.com/keelrun/keel/escalation"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/connect"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/gateway"
	"github.com/keelrun/keel/internal/logs"
	"github.com/keelrun/keel/internal/metrics"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/tools"
	"github.com/keelrun/keel/internal/tools/mcp"
	"github.com/keelrun/keel/internal/tools/sandbox"
	"github.com/keelrun/keel/internal/tools/snapshot"
	"github.com/keelrun/keel/internal/workspace"
	"github.com/keelrun/keel/workflows"
)

// Dial connects to the configured Temporal server.
func Dial(ctx context.Context, cfg config.Config) (client.Client, error) {
	return DialWithMetrics(ctx, cfg, nil)
}

// DialWithMetrics connects with a metrics handler, so the SDK's metrics and Keel's own (recorded
// through the same handler from workflows and activities) reach Prometheus. Payloads over
// store.PayloadThreshold go to the configured store instead of into history. Where and how it
// connects (TLS, API key, the Temporal profile, encryption) is connect.Dial's.
func DialWithMetrics(ctx context.Context, cfg config.Config, mh client.MetricsHandler) (client.Client, error) {
	st, err := OpenStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return connect.Dial(ctx, cfg, func(o *client.Options) {
		o.Logger = logs.SDK(cfg.LogLevel)
		o.MetricsHandler = mh
		o.ExternalStorage = store.ExternalStorage(st)
	})
}

// RegisterWorkflows registers both workflows under their contract names, with their Worker
// Versioning behaviours (sessionBehavior, turnBehavior; unversioned workers ignore them).
func RegisterWorkflows(w worker.WorkflowRegistry) {
	registerWorkflows(w, nil)
}

// SessionWorkflow is the signature of the session workflow a worker serves.
type SessionWorkflow = func(workflow.Context, contract.SessionInput) (contract.Summary, error)

// registerWorkflows is RegisterWorkflows with session serving the session workflow instead of
// workflows.AgentSession when it is not nil.
func registerWorkflows(w worker.WorkflowRegistry, session SessionWorkflow) {
	if session == nil {
		session = workflows.AgentSession
	}
	w.RegisterWorkflowWithOptions(session, workflow.RegisterOptions{Name: contract.SessionWorkflow, VersioningBehavior: sessionBehavior})
	w.RegisterWorkflowWithOptions(workflows.AgentTurn, workflow.RegisterOptions{Name: contract.TurnWorkflow, VersioningBehavior: turnBehavior})
}

// ToolHook wraps the activities' tool runner at wiring time: the demo injects a tool fault, the
// drills record every execution. Production wiring passes none.
type ToolHook = func(activities.ToolRunner) activities.ToolRunner

// Activities builds the activities' dependencies from the configuration. gatewayURL overrides the
// configured base URL (the fake gateway's address when it runs in-process); hooks wrap the tool
// runner, the first innermost.
func Activities(ctx context.Context, cfg config.Config, gatewayURL string, hooks ...ToolHook) (*activities.Activities, func(), error) {
	gcfg := gateway.Config{Provider: cfg.Gateway.Provider, BaseURL: cfg.Gateway.BaseURL, APIKey: cfg.Gateway.APIKey, Model: cfg.Gateway.Model}
	if gatewayURL != "" {
		gcfg.BaseURL = gatewayURL
	}
	gw, err := gateway.New(gcfg)
	if err != nil {
		return nil, nil, err
	}
	if err := CheckSandbox(cfg); err != nil {
		return nil, nil, err
	}
	models, err := modelChain(cfg, gw, gatewayURL)
	if err != nil {
		return nil, nil, err
	}
	st, err := OpenStore(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	acts := &activities.Activities{
		Models: &activities.Models{
			Chain:     models,
			Endpoints: endpoints(cfg, gcfg, cfg.Gateway.Fake && gatewayURL != ""),
		},
		Store:     store.WithCache(st, transcriptCache),
		LiveEvery: cfg.Events.Interval,
		Notifiers: Notifiers(cfg),
	}
	if cfg.Dev.StateDir != "" {
		acts.Snapshots = Snapshots(cfg)
	}
	if w := cfg.Workspaces; w.Root != "" {
		acts.Workspaces = &workspace.Manager{Root: w.Root, GitHubURL: w.GitHubURL, Token: w.GitToken, TokenHost: w.GitTokenHost,
			NoPush: !w.Push, CacheBytes: w.CacheBytes}
		if acts.Snapshots != nil {
			// Recorded through the worker's snapshots, which take each state incrementally and
			// which a restore writes through.
			acts.Workspaces.States, acts.Workspaces.Snapshots, acts.Workspaces.RecordBytes = acts.Store, acts.Snapshots, w.RecordBytes
		}
	}
	if j := cfg.Gateway.FixedJitter; j != nil {
		draw := *j
		acts.Models.Rand = func() float64 { return draw }
	}
	if len(cfg.MCP) > 0 {
		acts.MCP = mcp.NewManager(mcpServers(cfg.MCP))
	}
	// A session's work directory may not hold this worker's state, store or configuration.
	var r activities.ToolRunner = activities.DefaultTools{Settings: ToolSettings(cfg), MCP: acts.MCP, CheckWorkdir: cfg.CheckWorkdir}
	for _, h := range hooks {
		r = h(r)
	}
	acts.Tools = r
	return acts, func() {
		if acts.MCP != nil {
			_ = acts.MCP.Close()
		}
	}, nil
}

// endpoints serves the endpoints sessions name: own is the worker's gateway as it calls it (the
// in-process fake's address included), and only the keys of gateway.keys may go elsewhere.
// scripted says own is the dev stack's fake gateway in this process, which serves no other base
// URL: a session that names one is failed saying so, not answered by the scripted model.
func endpoints(cfg config.Config, own gateway.Config, scripted bool) *gateway.Endpoints {
	keys := make(map[string]gateway.Key, len(cfg.Gateway.Keys))
	for name, k := range cfg.Gateway.Keys {
		keys[name] = gateway.Key{Value: k.Value, BaseURL: k.BaseURL}
	}
	return &gateway.Endpoints{Own: own, Keys: keys, Scripted: scripted}
}

// CheckSandbox makes sure commands can run confined before a worker takes work: where the kernel
// refuses (no user namespaces, not Linux) the worker does not start, and the one-line error says
// why and how to run anyway.
func CheckSandbox(cfg config.Config) error {
	if cfg.Sandbox == nil {
		return nil
	}
	if err := sandbox.Available(*SandboxConfig(cfg.Sandbox)); err != nil {
		return fmt.Errorf("run_command needs its sandbox, and this system cannot provide one: %v; "+
			"to run commands unconfined anyway, set tools.sandbox: off (KEEL_TOOLS_SANDBOX=off), which is unsafe: "+
			"a command can then read the worker's secrets, write outside the work directory and reach the network", err)
	}
	return nil
}

// ToolSettings are the worker's tool settings as the tools take them, built once per worker.
func ToolSettings(cfg config.Config) tools.Settings {
	return tools.Settings{WorkerTools: cfg.WorkerTools, Sandbox: SandboxConfig(cfg.Sandbox)}
}

// SandboxConfig is the sandbox package's form of the configuration's tools.sandbox settings; nil
// when the sandbox is off.
func SandboxConfig(s *config.Sandbox) *sandbox.Config {
	if s == nil {
		return nil
	}
	return &sandbox.Config{Network: s.Network, CacheDir: s.CacheDir, Limits: sandbox.Limits{
		Processes: s.Processes, Memory: s.Memory, CPUTime: s.CPUTime, FileSize: s.FileSize,
	}}
}

// mcpServers is mcp.servers in the MCP package's form.
func mcpServers(servers []config.MCPServer) []mcp.ServerConfig {
	out := make([]mcp.ServerConfig, len(servers))
	for i, s := range servers {
		out[i] = mcp.ServerConfig(s)
	}
	return out
}

// modelChain builds the worker's chain: the primary, then the fallbacks of gateway.fallbacks. With
// the fake gateway, a fallback without a base URL is served by the fake too.
func modelChain(cfg config.Config, primary gateway.Provider, gatewayURL string) (*gateway.Chain, error) {
	var routes []gateway.Route
	for i, f := range cfg.Gateway.Fallbacks {
		fcfg := gateway.Config{Provider: f.Provider, BaseURL: f.BaseURL, APIKey: f.APIKey, Model: f.Model}
		if fcfg.BaseURL == "" && cfg.Gateway.Fake {
			fcfg.BaseURL = strings.TrimSuffix(gatewayURL, apiPath(cfg.Gateway.Provider)) + apiPath(f.Provider)
		}
		p, err := gateway.New(fcfg)
		if err != nil {
			return nil, fmt.Errorf("building gateway.fallbacks[%d]: %w", i, err)
		}
		routes = append(routes, gateway.Route{Provider: p, Model: f.Model})
	}
	return gateway.NewChain(0, gateway.Route{Provider: primary}, routes...), nil
}

// stores are the stores this process opened, one per backend and location.
var (
	storesMu sync.Mutex
	stores   = map[string]store.Store{}
)

// OpenStore returns the configured transcript store, opened once per process: the client (for
// large payloads), the activities and the starter's commands share it, so a worker holds one
// PostgreSQL pool, not one per use. It stays open for the life of the process; callers do not
// close it. With codec.keys, what it keeps is encrypted at rest (store.Sealed).
func OpenStore(ctx context.Context, cfg config.Config) (store.Store, error) {
	loc := cfg.Store.Path
	if cfg.Store.Backend == "postgres" {
		loc = cfg.Store.DSN
	}
	keys, err := connect.Keys(cfg, connect.OSEnv)
	if err != nil {
		return nil, err
	}
	key := cfg.Store.Backend + "\x00" + loc + "\x00" + strings.Join(cfg.Codec.Keys, ",")
	storesMu.Lock()
	defer storesMu.Unlock()
	if st, ok := stores[key]; ok {
		return st, nil
	}
	st, err := store.Open(ctx, cfg.Store.Backend, loc)
	if err != nil {
		return nil, err
	}
	if keys != nil {
		st = store.Sealed(st, keys)
	}
	stores[key] = st
	return st, nil
}

// Notifiers builds the escalation channels named in the configuration (escalation's channel rows).
func Notifiers(cfg config.Config) map[string]escalation.Notifier {
	return escalation.Notifiers(cfg.Escalation)
}

// apiPath is the path a provider's base URL ends with on a gateway that speaks it.
func apiPath(provider string) string {
	p, _ := contract.ProviderNamed(provider)
	return p.APIPath
}

// transcriptCache bounds the transcripts a worker keeps in memory: about one per active session.
const transcriptCache = 1024

// NewWorker creates a worker for the task queue with both workflows and every activity. It asks
// the server first whether it pushes activity cancellation and sets the activities' heartbeat
// cadence from the answer (ChooseHeartbeats).
func NewWorker(c client.Client, cfg config.Config, acts *activities.Activities) worker.Worker {
	hb := ChooseHeartbeats(context.Background(), c, cfg.Temporal.Namespace, cfg.Temporal.FallbackHeartbeat)
	return NewWorkerWith(c, cfg.Temporal.TaskQueue, worker.Options{}, hb, acts)
}

// NewWorkerWith creates a worker on queue with opts and the heartbeat cadence hb, registering both
// workflows and every activity.
func NewWorkerWith(c client.Client, queue string, opts worker.Options, hb Heartbeats, acts *activities.Activities) worker.Worker {
	return newWorker(c, queue, opts, hb, acts, nil)
}

func newWorker(c client.Client, queue string, opts worker.Options, hb Heartbeats, acts *activities.Activities, session SessionWorkflow) worker.Worker {
	acts.HeartbeatEvery = hb.Every
	opts.MaxHeartbeatThrottleInterval = hb.Throttle()
	if acts.LiveEvery > 0 {
		// A watched call's heartbeats go out at events.interval, not held longer by the SDK.
		opts.MaxHeartbeatThrottleInterval = min(opts.MaxHeartbeatThrottleInterval, acts.LiveEvery)
	}
	w := worker.New(c, queue, withPollerAutoscaling(opts))
	registerWorkflows(w, session)
	acts.Register(w)
	return w
}

// withPollerAutoscaling lets the worker grow its workflow and activity task pollers with the work
// waiting (worker.NewPollerBehaviorAutoscaling), where opts sets neither a poller count nor a
// behaviour. The SDK's default is two pollers of each kind: with tens of sessions on one worker,
// every turn's workflow tasks (the session's, its child's) and activity tasks wait in the server
// for one of two long polls to come back, and the wait grows with the sessions.
func withPollerAutoscaling(opts worker.Options) worker.Options {
	if opts.MaxConcurrentWorkflowTaskPollers == 0 && opts.WorkflowTaskPollerBehavior == nil {
		opts.WorkflowTaskPollerBehavior = worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{})
	}
	if opts.MaxConcurrentActivityTaskPollers == 0 && opts.ActivityTaskPollerBehavior == nil {
		opts.ActivityTaskPollerBehavior = worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{})
	}
	return opts
}

// Wiring is what a worker process serves beyond its configuration: hooks around the tool runner
// (the drills record every execution) and a session workflow in place of Keel's (a drill's
// second build wraps it with a versioned change). Production wiring is the zero value.
type Wiring struct {
	Hooks   []ToolHook
	Session SessionWorkflow
	// Store, when set, wraps the store the activities use (a test worker's fault injection).
	Store func(store.Store) store.Store
}

// RunWorker is the worker process: connect, build the dependencies, serve metrics if configured,
// and serve the task queue until ctx ends.
func RunWorker(ctx context.Context, cfg config.Config, hooks ...ToolHook) error {
	return RunWorkerWith(ctx, cfg, Wiring{Hooks: hooks})
}

// RunWorkerWith is RunWorker with wiring. With temporal.deployment set the worker is versioned
// (Versioning) and, once it polls, makes itself current in a deployment that has no current
// version yet (AdoptDeployment). Only this process is ever versioned: the workers the starter
// runs in its own process (demo, dev, run --dev) stay unversioned, so a demo never takes a
// deployment's traffic.
func RunWorkerWith(ctx context.Context, cfg config.Config, wiring Wiring) error {
	logs.Operator(os.Stderr, cfg.LogLevel)
	if err := CheckSandbox(cfg); err != nil {
		return err
	}
	dep, err := Versioning(cfg)
	if err != nil {
		return err
	}
	if cfg.Sandbox != nil {
		slog.Info(sandbox.Enforcement())
	}
	var mh client.MetricsHandler
	if cfg.Metrics.Address != "" {
		m, err := metrics.New()
		if err != nil {
			return err
		}
		addr, err := m.Serve(ctx, cfg.Metrics.Address)
		if err != nil {
			return err
		}
		slog.Info("serving metrics", "url", "http://"+addr.String()+metrics.Path)
		mh = m.Handler()
	}
	c, err := DialWithMetrics(ctx, cfg, mh)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := EnsureSearchAttributes(ctx, c, cfg.Temporal.Namespace); err != nil {
		return err
	}
	acts, closeDeps, err := Activities(ctx, cfg, "", wiring.Hooks...)
	if err != nil {
		return err
	}
	defer closeDeps()
	if wiring.Store != nil {
		acts.Store = wiring.Store(acts.Store)
	}
	hb := ChooseHeartbeats(ctx, c, cfg.Temporal.Namespace, cfg.Temporal.FallbackHeartbeat)
	w := newWorker(c, cfg.Temporal.TaskQueue, worker.Options{DeploymentOptions: dep}, hb, acts, wiring.Session)
	if err := w.Start(); err != nil {
		return fmt.Errorf("starting the worker: %w", err)
	}
	slog.Info(StartLine(cfg))
	if dep.UseVersioning {
		if err := announceVersion(ctx, c, dep.Version); err != nil {
			w.Stop()
			return err
		}
	}
	<-ctx.Done()
	w.Stop()
	return nil
}

// StartLine is what a worker says once it polls: where, for which model, and whether commands run
// confined, so a person who started it sees at once what it will serve.
func StartLine(cfg config.Config) string {
	model := cfg.Gateway.Provider + "/" + cfg.Gateway.Model
	switch {
	case cfg.Gateway.Fake && cfg.Gateway.BaseURL == "":
		model += " with gateway.fake and no gateway.base_url: set it to a fake gateway's (starter gateway)"
	case cfg.Gateway.Fake:
		model += " at " + cfg.Gateway.BaseURL + " (gateway.fake: no key required)"
	case cfg.Gateway.BaseURL != "":
		model += " at " + cfg.Gateway.BaseURL
	default:
		model += " at the provider's own API"
	}
	sandbox := "on"
	if cfg.Sandbox == nil {
		sandbox = "off (tools.sandbox: off; commands run unconfined)"
	}
	line := fmt.Sprintf("worker ready: task queue %q on Temporal %s (namespace %s); model %s; sandbox %s",
		cfg.Temporal.TaskQueue, cfg.Temporal.Address, cfg.Temporal.Namespace, model, sandbox)
	if cfg.Temporal.Deployment != "" {
		line += fmt.Sprintf("; deployment %s, build %s", cfg.Temporal.Deployment, cfg.Temporal.BuildID)
	}
	return line
}

// Snapshots is the store of work directory snapshots in the state directory, with the
// configured size limits.
func Snapshots(cfg config.Config) *snapshot.Store {
	s := snapshot.New(snapshot.Dir(cfg.Dev.StateDir))
	s.SessionMax, s.TotalMax = cfg.Snapshots.SessionMax, cfg.Snapshots.TotalMax
	return s
}
