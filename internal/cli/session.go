package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/jsondur"
	"github.com/keelrun/keel/internal/session"
	"github.com/keelrun/keel/internal/textfmt"
)

// sessionSpec is what the demo and run commands start.
type sessionSpec struct {
	workflowID string
	task       string
	workdir    string
	// source, when set, is the repository and commit the workers make the workspace from.
	source *contract.Source
	output string
	// job is true when the workflow ID comes from a job key: a finished job is not run again.
	job bool
	// input, when set, is started as it is (a fork carries another session's state); task then
	// only labels the session in the Web UI.
	input *contract.SessionInput
	// endpoint is the model endpoint the run's flags asked for; nil leaves it to the workers.
	endpoint *contract.Endpoint
	// ownWorker says the task queue is this process's own (app.ProcessQueue), served by its
	// worker alone.
	ownWorker bool
	// goal is the goal --until gave, if any.
	goal *contract.Goal
}

// startSession starts (or, for the same workflow ID, attaches to) a session, follows it until it
// ends and returns its summary with the exit status it maps to.
func startSession(ctx context.Context, c client.Client, cfg config.Config, spec sessionSpec, p printer) (contract.Summary, error) {
	nameSession(p, spec.workflowID)
	watcher := session.NewWatcher()
	in := sessionInput(cfg, spec)
	// The session starts watched: its input holds this starter's lease, renewed while it follows.
	in.Watchers = []contract.Watch{{Watcher: watcher, Lease: jsondur.Duration(contract.WatchLease)}}
	showWorkdir(p, in.Workdir)
	showPrices(p, cfg)
	sc := session.Client{Temporal: c}
	run, ran, err := sc.Start(ctx, session.Start{
		ID: spec.workflowID, TaskQueue: cfg.Temporal.TaskQueue, Task: clip(spec.task, 200), Details: staticDetails(in),
		Input: in, Job: spec.job, Watcher: watcher, Listed: len(cfg.Codec.Keys) == 0,
	})
	if err != nil {
		return contract.Summary{}, err
	}
	said := fmt.Sprintf("session %s started", run.GetID())
	if ran {
		// The job already ran: return that run's result instead of running it twice.
		said = fmt.Sprintf("job %s already ran; its result follows", spec.workflowID)
	}
	if !ran {
		said += "; model: " + modelLabel(cfg, in)
	}
	if link := uiLink(cfg, run.GetID()); link != "" {
		said += "; Web UI: " + link
	}
	p.info(said)
	wctx, stopWarn := context.WithCancel(ctx)
	defer stopWarn()
	go warnNoWorker(wctx, c, cfg, p)
	stopWatching := sc.KeepWatching(ctx, run.GetID(), watcher, false)
	defer stopWatching()
	// A job that already ran shows its result only; a new session every event from its start.
	source, closeSource, err := followLive(ctx, c, cfg, run.GetID(), ran)
	if err != nil {
		return contract.Summary{}, err
	}
	defer closeSource()
	f := &follower{c: sc, workflowID: run.GetID(), p: p, source: source, interactive: interactive(p)}
	if spec.ownWorker {
		f.ownQueue = cfg.Temporal.TaskQueue
	}
	return f.follow(ctx, run)
}

// sessionInput is what a new session starts with: the spec's own input, or one built from the
// configuration.
func sessionInput(cfg config.Config, spec sessionSpec) contract.SessionInput {
	if spec.input != nil {
		return *spec.input
	}
	in := session.Defaults(cfg)
	in.Task, in.Workdir, in.Source = spec.task, spec.workdir, spec.source
	if spec.endpoint != nil {
		ep := *spec.endpoint
		ep.Scripted = cfg.Gateway.Fake
		in.Endpoint = &ep
	}
	in.Goal = spec.goal
	return in
}

func staticDetails(in contract.SessionInput) string {
	model := in.Model
	if ep := in.Endpoint; ep != nil {
		model = endpointLabel(*ep, in.Model)
	}
	where := fmt.Sprintf("**Work directory** `%s`", in.Workdir)
	if src := in.Source; src != nil {
		where = fmt.Sprintf("**Repository** `%s` at `%s`", src.Repo, src.Commit+src.Ref)
	}
	return fmt.Sprintf("**Task**\n\n%s\n\n%s · **model** %s · **limits** %s, %s, %s",
		in.Task, where, model, textfmt.Count(int64(in.Limits.MaxTurns), "turn"),
		textfmt.Duration(in.Limits.MaxDuration.Std()), textfmt.Count(in.Limits.MaxTokens, "token"))
}

// endpointLabel names a session's endpoint as provider/model at base URL, with the key's name;
// the parts it leaves to the workers are left out.
func endpointLabel(ep contract.Endpoint, model string) string {
	if ep.Model != "" {
		model = ep.Model
	}
	s := model
	if ep.Provider != "" {
		s = ep.Provider + "/" + model
	}
	if ep.BaseURL != "" {
		s += " at " + ep.BaseURL
	}
	if ep.Key != "" {
		s += " (key " + ep.Key + ")"
	}
	return s
}

// modelLabel says which model serves a session, as its start line shows it: the scripted fake when
// the session asked for it (only a dev stack's scripted worker serves it), else the endpoint the
// session names, else the provider and model of the gateway settings here, which the workers'
// own settings replace when they differ.
func modelLabel(cfg config.Config, in contract.SessionInput) string {
	ep := contract.Endpoint{}
	if in.Endpoint != nil {
		ep = *in.Endpoint
	}
	if ep.Scripted && ep.BaseURL == "" {
		return "the scripted fake model (gateway.fake), no real model is called"
	}
	provider, model := ep.Provider, ep.Model
	if provider == "" {
		provider = cfg.Gateway.Provider
	}
	if model == "" {
		model = in.Model
	}
	if model == "" {
		model = contract.DefaultModel(provider)
	}
	s := provider + "/" + model
	if ep.BaseURL != "" {
		return s + " at " + ep.BaseURL
	}
	return s + " (the workers' gateway settings; theirs decide when they differ)"
}

// resolveArg replaces *id, a session ID as a person typed it (whole, or a unique prefix of it or
// of its short suffix), with the workflow ID it names.
func resolveArg(ctx context.Context, c client.Client, id *string) error {
	full, err := session.Client{Temporal: c}.Resolve(ctx, *id)
	if err != nil {
		return err
	}
	*id = full
	return nil
}

// uiLink is the session's page in the Web UI, or "" when temporal.ui_url says none runs.
func uiLink(cfg config.Config, workflowID string) string {
	if cfg.Temporal.UIURL == "" {
		return ""
	}
	return fmt.Sprintf("%s/namespaces/%s/workflows/%s", cfg.Temporal.UIURL, cfg.Temporal.Namespace, workflowID)
}

// exitCode maps a session's final status to the starter's exit status.
func exitCode(status string) int {
	switch status {
	case contract.StatusCompleted:
		return ExitOK
	case contract.StatusLimit:
		return ExitLimit
	case contract.StatusCancelled:
		return ExitCancelled
	default:
		return ExitFailure
	}
}

// newWorkflowID names a session that has no job key: readable, sortable, unique.
func newWorkflowID(kind string) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("keel-%s-%s-%s", kind, time.Now().UTC().Format("20060102-150405"), hex.EncodeToString(b))
}

// clip puts s on one line, at most n bytes long.
func clip(s string, n int) string { return textfmt.Clip(s, n) }

// workerCheckAfter is how long a new session may wait before the starter checks that some worker
// polls its task queue.
const workerCheckAfter = 2 * time.Second

// warnNoWorker tells the user, a moment after the start, when no worker polls the session's task
// queue: otherwise the session would wait without a word.
func warnNoWorker(ctx context.Context, c client.Client, cfg config.Config, p printer) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(workerCheckAfter):
	}
	resp, err := c.DescribeTaskQueue(ctx, cfg.Temporal.TaskQueue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil || len(resp.GetPollers()) > 0 || ctx.Err() != nil {
		return
	}
	p.info(fmt.Sprintf("no worker polls task queue %q on %s: the session waits until one does. Start one with `go run ./worker` "+
		"(same temporal.address and temporal.task_queue), or run again with --dev for a local one", cfg.Temporal.TaskQueue, cfg.Temporal.Address))
}
