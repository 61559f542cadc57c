package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/keelrun/keel/internal/app"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/devserver"
	"github.com/keelrun/keel/internal/devkit/devstack"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/tools/sandbox"
)

func runCmd(g *globals) *cobra.Command {
	var dev bool
	var workdir, output, taskFile, keyRef, until, ref string
	var job contract.JobKey
	var pr int
	cmd := &cobra.Command{
		Use:     "run [--dev] [--workdir DIR] TASK | --task-file FILE",
		Example: "  starter run --workdir ./service \"fix the failing test\"\n  starter run --dev --task-file task.md\n  KEEL_GATEWAY_FAKE=true starter run --dev \"fix the failing test\"   (the scripted fake model, no key)",
		Short:   "Run a task with the configured provider",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := newPrinter(output, g.stdout)
			if err != nil {
				return err
			}
			task, err := readTask(args, taskFile, cmd.InOrStdin())
			if err != nil {
				return err
			}
			gh, err := githubContext(cmd, job.Repository, pr, job.Commit, os.Getenv)
			if err != nil {
				return err
			}
			// The model's key is a worker's setting: only --dev, which runs a worker here, needs it.
			prog := config.Starter
			if dev {
				prog |= config.Worker
			}
			cfg, err := g.loadFor(cmd, prog, nil)
			if err != nil {
				return withFakeHint(err)
			}
			src, err := sourceOf(cmd, job, ref)
			if err != nil {
				return err
			}
			abs := ""
			if src != nil {
				p.info(fmt.Sprintf("workspace: %s at %s, made by the worker that runs the session", src.Repo, src.Commit+src.Ref))
			} else if abs, err = workdirOf(cfg, workdir, dev, p); err != nil {
				return err
			}
			ctx := cmd.Context()
			if dev {
				// This run's worker serves this run alone: no other worker answers it, and it answers
				// no other starter's session.
				cfg.Temporal.TaskQueue = app.ProcessQueue(cfg.Temporal.TaskQueue)
				stop, err := startDevWorker(ctx, g, cfg)
				if err != nil {
					return err
				}
				defer stop()
			}
			c, err := app.Dial(ctx, cfg)
			if err != nil && !dev {
				// No Temporal answers where the configuration says: a configuration problem (exit 2),
				// and the first run of someone without a server.
				return &exitError{code: ExitUsage, err: fmt.Errorf("%w; add --dev to bring up a local dev server and a worker for this run, or start `starter dev` in another terminal", err)}
			}
			if err != nil {
				return err
			}
			defer c.Close()
			ep, err := sessionEndpoint(cmd, cfg, keyRef)
			if err != nil {
				return err
			}
			if ep != nil {
				p.info("model endpoint: " + endpointLabel(*ep, cfg.Gateway.Model) + "; the workers fill in what the flags leave out")
			}
			spec := sessionSpec{workflowID: newWorkflowID("run"), task: task, workdir: abs, source: src, output: output, endpoint: ep, ownWorker: dev, goal: goalOf(until)}
			// A ref moves, so a run on one is no job: each start is a session of its own.
			if job.Repository != "" && ref == "" {
				job.Model = cfg.Gateway.Model
				spec.workflowID, spec.job = job.WorkflowID(), true
			}
			spec = withGitHub(cfg, spec, gh)
			sum, err := startSession(ctx, c, cfg, spec, p)
			if err != nil {
				return err
			}
			p.summary(sum)
			if code := exitCode(sum.Status); code != ExitOK {
				return &exitError{code: code}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&job.Repository, "repo", "", "job key: repository; with it, a second start of the same job attaches to the first. "+
		"With --commit or --ref and no --workdir, also where the session's files come from: an https URL or owner/name (GitHub), "+
		"materialized by the worker at that commit")
	cmd.Flags().StringVar(&job.Commit, "commit", "", "job key: commit; with --repo and no --workdir, the exact commit (full SHA) the workspace is checked out at")
	cmd.Flags().StringVar(&ref, "ref", "", "with --repo and no --workdir: the branch or tag the worker checks out (resolved when the workspace is made); a run on a ref is not a job")
	prFlag(cmd, &pr)
	cmd.Flags().StringVar(&job.Path, "path", "", "job key: path in the repository")
	cmd.Flags().StringVar(&job.PromptVersion, "prompt-version", "v1", "job key: prompt version")
	cmd.Flags().BoolVar(&dev, "dev", false, "bring up a local dev server if none answers, and a worker in this process that serves this run alone (on a task queue of its own)")
	cmd.Flags().StringVar(&workdir, "workdir", ".", "the work directory the tools are confined to, as the workers see it (an absolute path that is not on this machine is taken as one on the workers)")
	cmd.Flags().StringVar(&taskFile, "task-file", "", "read the task from FILE (- for standard input) instead of the argument; one argument is capped at 128 KiB")
	outputFlag(cmd, &output)
	untilFlag(cmd, &until)
	addLimitFlags(cmd)
	config.AddFlags(cmd.Flags(), config.GatewayBaseURL, config.ToolsApproval)
	cmd.Flags().StringVar(&keyRef, "api-key-ref", "", "the NAME of the API key the workers send to --base-url, declared in their gateway.keys; never the key itself (default: the key the workers declare for that base URL)")
	return cmd
}

// workdirOf is the session's work directory as the workers see it (resolveWorkdir), checked
// against Keel's own files when it is on this machine.
func workdirOf(cfg config.Config, workdir string, dev bool, p printer) (string, error) {
	abs, onWorkers, err := resolveWorkdir(workdir, dev)
	if err != nil {
		return "", err
	}
	if onWorkers {
		p.info(fmt.Sprintf("work directory %s is not on this machine: it is taken as a path on the workers, which must have it", abs))
	} else if err := cfg.CheckWorkdir(abs); err != nil {
		return "", &exitError{code: ExitUsage, err: err}
	}
	return abs, nil
}

// withFakeHint adds to a missing gateway.api_key the exact way to try a run without one: the
// scripted fake gateway, and --dev for a worker that serves it.
func withFakeHint(err error) error {
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Key != config.GatewayAPIKey {
		return err
	}
	return &exitError{code: ExitUsage, err: fmt.Errorf("%w; to run on the scripted fake gateway instead, set %s=true (%s: true in the file) and add --dev for a local worker that serves it",
		err, config.EnvName(config.GatewayFake), config.GatewayFake)}
}

// sessionEndpoint is the model endpoint a run's flags ask for (--provider, --base-url, --model,
// --api-key-ref), or nil when none is given: the workers' configuration then decides, as it
// always did. A bad value is a usage error here rather than a failed session later.
func sessionEndpoint(cmd *cobra.Command, cfg config.Config, keyRef string) (*contract.Endpoint, error) {
	f := cmd.Flags()
	var ep contract.Endpoint
	if f.Changed("provider") {
		ep.Provider = cfg.Gateway.Provider
	}
	if f.Changed("base-url") {
		u, err := contract.NormalizeBaseURL(cfg.Gateway.BaseURL)
		if err != nil {
			return nil, usageErr("--base-url: %v", err)
		}
		ep.BaseURL = u
	}
	if f.Changed("model") {
		if strings.TrimSpace(cfg.Gateway.Model) == "" {
			return nil, usageErr("--model is empty: name the model the provider should run")
		}
		ep.Model = cfg.Gateway.Model
	} else if ep.Provider != "" {
		// Another provider without --model runs that provider's default, never the model the
		// configuration names for its own provider.
		ep.Model = contract.DefaultModel(ep.Provider)
	}
	if f.Changed("api-key-ref") {
		if err := contract.CheckKeyName(keyRef); err != nil {
			return nil, usageErr("--api-key-ref: %v", err)
		}
		ep.Key = keyRef
	}
	if ep == (contract.Endpoint{}) {
		return nil, nil
	}
	return &ep, nil
}

// startDevWorker brings up the dev stack and a worker in this process.
func startDevWorker(ctx context.Context, g *globals, cfg config.Config) (func(), error) {
	stack, err := devstack.Start(ctx, cfg, g.stderr)
	if err != nil {
		return nil, err
	}
	c, err := app.Dial(ctx, cfg)
	if err != nil {
		stack.Close()
		return nil, err
	}
	if err := app.EnsureSearchAttributes(ctx, c, cfg.Temporal.Namespace); err != nil {
		c.Close()
		stack.Close()
		return nil, err
	}
	url := ""
	if cfg.Gateway.Fake {
		url = stack.GatewayURL(cfg.Gateway.Provider)
	}
	stop, err := app.StartWorker(ctx, c, cfg, url)
	if err != nil {
		c.Close()
		stack.Close()
		return nil, err
	}
	if cfg.Sandbox != nil && !sandbox.Bounded() {
		// A worker of its own logs this line when it starts; the operator of the in-process
		// worker sees no worker log, so it is shown here.
		fmt.Fprintf(g.stderr, "keel: warning: %s\n", sandbox.Enforcement())
	}
	return func() { stop(); c.Close(); stack.Close() }, nil
}

func devCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the dev server, a worker and the fake gateway in the foreground until Ctrl+C",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.load(cmd, map[string]any{config.GatewayFake: true})
			if err != nil {
				return err
			}
			ctx, cancel := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer cancel()
			// A server that already answers is reused (devstack.Start): then this process only
			// adds a worker to the stack that runs there, and says so instead of "ready".
			joined := devserver.Answering(cfg.Temporal.Address)
			stop, err := startDevWorker(ctx, g, cfg)
			if err != nil {
				return err
			}
			defer stop()
			if len(cfg.Codec.Keys) > 0 {
				stopCodec, err := startCodecServer(cfg, g.stdout)
				if err != nil {
					return err
				}
				defer stopCodec()
			}
			fmt.Fprintln(g.stdout, devReadyLine(cfg, joined))
			fmt.Fprintln(g.stdout, devModelLine(cfg))
			<-ctx.Done()
			if joined {
				fmt.Fprintln(g.stdout, "keel: stopping this worker; the stack it joined goes on")
			} else {
				fmt.Fprintln(g.stdout, "keel: stopping the dev stack")
			}
			return nil
		},
	}
	addLimitFlags(cmd)
	return cmd
}

// devReadyLine is what `starter dev` says once its worker polls: a stack of its own is ready,
// or, when a Temporal server already answered on the address, that it only added a worker to
// the stack running there (a second `starter dev`).
func devReadyLine(cfg config.Config, joined bool) string {
	if joined {
		return fmt.Sprintf("keel: a Temporal server already answers on %s, so this adds a worker to the stack that runs there "+
			"(task queue %s, Web UI %s) instead of starting a stack of its own. Ctrl+C stops this worker only.",
			cfg.Temporal.Address, cfg.Temporal.TaskQueue, cfg.Temporal.UIURL)
	}
	return fmt.Sprintf("keel: dev stack ready: Temporal %s, Web UI %s, task queue %s. Ctrl+C stops it.",
		cfg.Temporal.Address, cfg.Temporal.UIURL, cfg.Temporal.TaskQueue)
}

// devModelLine says which provider and model the dev worker serves: the fake gateway's scripted
// model, which answers only sessions that ask for it (run --dev, demo, gateway.fake).
func devModelLine(cfg config.Config) string {
	return fmt.Sprintf("keel: model: provider %s, model %s, answered by the fake gateway's scripted model "+
		"(gateway.fake): it serves only sessions that ask for the scripted model (starter run --dev, starter demo)",
		cfg.Gateway.Provider, cfg.Gateway.Model)
}

func gatewayCmd(g *globals) *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Serve the fake model gateway (OpenAI and Anthropic wire formats) until Ctrl+C",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer cancel()
			gw := fakegw.New(fakegw.Options{})
			if err := gw.Start(listen); err != nil {
				return fmt.Errorf("starting the fake gateway on %s: %w", listen, err)
			}
			defer func() { _ = gw.Close() }()
			fmt.Fprintf(g.stdout, "keel: fake gateway on %s (OpenAI base URL %s/v1, Anthropic base URL %s)\n", gw.BaseURL(), gw.BaseURL(), gw.BaseURL())
			<-ctx.Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8089", "address to listen on")
	return cmd
}

// readTask is the task of a run: the one argument, or the contents of --task-file (standard input
// for "-"). A task that is empty or only blank is a usage error: a session needs something to do.
func readTask(args []string, taskFile string, stdin io.Reader) (string, error) {
	var task string
	switch {
	case len(args) == 1 && taskFile != "":
		return "", usageErr("give the task as an argument or with --task-file, not both")
	case len(args) == 1:
		task = args[0]
	case taskFile == "-":
		b, err := io.ReadAll(stdin)
		if err != nil {
			return "", usageErr("--task-file -: reading standard input: %v", err)
		}
		task = string(b)
	case taskFile != "":
		b, err := os.ReadFile(taskFile)
		if err != nil {
			return "", usageErr("--task-file %q: %v", taskFile, err)
		}
		task = string(b)
	default:
		return "", usageErr("no task: give it as an argument (starter run \"fix the failing test\") or with --task-file FILE (- for standard input)")
	}
	if strings.TrimSpace(task) == "" {
		return "", usageErr("the task is empty: say what the session should do")
	}
	return task, nil
}

// resolveWorkdir is the session's work directory as the workers see it. A relative path is resolved
// here and must be a directory here; an absolute path that is not on this machine is a path on the
// workers (a shared volume such as /workspace), except with --dev, whose worker runs here.
func resolveWorkdir(dir string, localWorker bool) (abs string, onWorkers bool, err error) {
	if filepath.IsAbs(dir) {
		st, statErr := os.Stat(dir)
		switch {
		case statErr == nil && st.IsDir():
			return filepath.Clean(dir), false, nil
		case statErr == nil:
			return "", false, usageErr("--workdir %q is a file, not a directory", dir)
		case localWorker:
			return "", false, usageErr("--workdir %q is not a directory, and the --dev worker runs on this machine", dir)
		}
		return filepath.Clean(dir), true, nil
	}
	abs, err = filepath.Abs(dir)
	if err != nil {
		return "", false, usageErr("--workdir %q: %v", dir, err)
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return "", false, usageErr("--workdir %q is not a directory here; give an absolute path for a directory that lives on the workers", dir)
	}
	return abs, false, nil
}

// untilFlag adds --until: goal mode's check command.
func untilFlag(cmd *cobra.Command, until *string) {
	cmd.Flags().StringVar(until, "until", "", `goal mode: when the model ends its turn, run this check command in the work directory (as run_command, under the tool policy); the session goes on until it exits 0, a limit trips, or the same failure comes back 3 times in a row (then a person is asked), e.g. --until "go test ./..."`)
}

// goalOf is the goal of an --until value, nil for none.
func goalOf(until string) *contract.Goal {
	if strings.TrimSpace(until) == "" {
		return nil
	}
	return &contract.Goal{Check: until}
}

// sourceOf is the repository and commit a run's workspace comes from: --repo with --commit or
// --ref when --workdir is not given, nil otherwise (--repo with --workdir stays a job key on a
// directory the workers have, as before). A bad value is a usage error here, not a failed session.
func sourceOf(cmd *cobra.Command, job contract.JobKey, ref string) (*contract.Source, error) {
	f := cmd.Flags()
	switch {
	case ref != "" && job.Repository == "":
		return nil, usageErr("--ref %q needs --repo: the repository the branch or tag is in", ref)
	case ref != "" && f.Changed("workdir"):
		return nil, usageErr("--ref checks out a repository, --workdir names a directory the workers have: give one of them")
	case job.Repository == "" || f.Changed("workdir") || (job.Commit == "" && ref == ""):
		return nil, nil
	}
	src := contract.Source{Repo: job.Repository, Commit: job.Commit, Ref: ref}
	if err := src.Check(); err != nil {
		return nil, usageErr("--repo/--commit/--ref: %v", err)
	}
	return &src, nil
}
