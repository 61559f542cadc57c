package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/keelrun/keel/internal/contract"
	sandboxdefaults "github.com/keelrun/keel/internal/tools/sandbox/defaults"
)

//go:generate go run ./genconfig

// Program is a set of Keel's programs, for the table's "read by" and "required by" columns: a key
// a program requires stops that program at start when it is empty, and only that program.
type Program uint8

// Keel's programs.
const (
	// Worker is every program that runs sessions' model calls and tools: the worker, and the
	// starter's run, dev, demo and selftest, which may run one in-process.
	Worker Program = 1 << iota
	// Starter is the starter, which starts and steers sessions through Temporal; its client
	// commands (cancel, answer, watch and the like) call no model.
	Starter
	// SlackBot is the Slack bot, which turns button clicks into answers and calls no model.
	SlackBot
	// GitHubBot is the GitHub bot, which takes webhook deliveries (pull request comments and
	// events) and calls no model.
	GitHubBot
)

// programNames name each Program in the docs and in messages.
var programNames = []struct {
	p          Program
	name, need string
}{
	{Worker, "worker", "to call the model"},
	{Starter, "starter", "by the starter"},
	{SlackBot, "slackbot", "by the Slack bot"},
	{GitHubBot, "githubbot", "by the GitHub bot"},
}

// String lists the programs of p, as the docs name them.
func (p Program) String() string {
	var names []string
	for _, n := range programNames {
		if p&n.p != 0 {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, ", ")
}

// need says why a key is required in p, for the one-line error: "by the Slack bot".
func (p Program) need() string {
	for _, n := range programNames {
		if p&n.p != 0 {
			return n.need
		}
	}
	return ""
}

// Kind says how a key's value decodes and what it must look like.
type Kind uint8

// Kinds of keys.
const (
	// Text is any string.
	Text Kind = iota
	// Bool is true or false.
	Bool
	// Count is a whole number of zero or more.
	Count
	// Duration is a Go duration (90s, 5m, 1h); 0 or empty is zero.
	Duration
	// Fraction is empty (none) or a number from 0 to 1.
	Fraction
	// Choice is one of OneOf, compared in lower case.
	Choice
	// List is a YAML list, or one comma-separated string (an environment variable).
	List
	// Path is a file or folder, made absolute against the working directory at load time.
	Path
	// MiB is a whole number of mebibytes, decoded into bytes.
	MiB
	// Map is a map of strings to strings.
	Map
	// Object is structured YAML (Shape says which), set in the file only.
	Object
	// Price is an amount of money, a number of zero or more.
	Price
)

var kindNames = [...]string{"text", "bool", "count", "duration", "fraction", "choice", "list", "path", "MiB", "map", "object", "price"}

func (k Kind) String() string { return kindNames[k] }

// Setting is one row of the table of configuration keys. The loader, the command-line flags, the
// checks each program makes, docs/configuration.md's key table and keel.example.yaml are all made
// from these rows (go generate ./internal/config writes the last two), so a key is written once.
type Setting struct {
	// Name is the key as keel.yaml nests it, with dots.
	Name string
	Kind Kind
	// Default is the value when nothing sets the key; a value the loader computes instead (the
	// state folder, the Web UI link) is empty here and described by DefaultDoc.
	Default any
	// DefaultDoc describes the default in the docs when Default alone would not (markdown).
	DefaultDoc string
	// OneOf lists the values a Choice takes.
	OneOf []string
	// Shape says what an Object must look like, for the error when it does not.
	Shape string
	// Env lists environment variables read besides KEEL_<NAME> (EnvName), which wins over them.
	Env []string
	// Flag is the command-line flag that sets the key in FlagIn's programs; FlagUsage is its help.
	Flag      string
	FlagUsage string
	FlagIn    Program
	// ReadBy are the programs that read the key; Required those that refuse to start while it is
	// empty, unless the Bool key Unless is true. Why ends that refusal.
	ReadBy   Program
	Required Program
	Unless   string
	Why      string
	// Channel is the escalation channel that cannot notify without the key: a configuration
	// whose escalation.channels lists it is refused while the key is empty.
	Channel string
	// Doc is the key's meaning in docs/configuration.md (markdown); Hint its comment in
	// keel.example.yaml, "" for none ("\n" breaks a line).
	Doc  string
	Hint string
	// into points at the field the value is decoded into.
	into func(*draft) any
}

// The configuration keys. Code names a key only through these constants, so a key's name is
// written once.
const (
	TemporalAddress           = "temporal.address"
	TemporalNamespace         = "temporal.namespace"
	TemporalTaskQueue         = "temporal.task_queue"
	TemporalUIURL             = "temporal.ui_url"
	TemporalTurnsPerRun       = "temporal.turns_per_run"
	TemporalFallbackHeartbeat = "temporal.fallback_heartbeat"
	TemporalHeartbeatTimeout  = "temporal.heartbeat_timeout"
	TemporalDeployment        = "temporal.deployment"
	TemporalBuildID           = "temporal.build_id"
	TemporalProfile           = "temporal.profile"
	TemporalAPIKey            = "temporal.api_key"
	TemporalConnectTimeout    = "temporal.connect_timeout"
	TemporalTLSEnabled        = "temporal.tls.enabled"
	TemporalTLSCA             = "temporal.tls.ca"
	TemporalTLSCert           = "temporal.tls.cert"
	TemporalTLSKey            = "temporal.tls.key"
	TemporalTLSServerName     = "temporal.tls.server_name"

	CodecKeys    = "codec.keys"
	CodecListen  = "codec.listen"
	CodecToken   = "codec.token"
	CodecOrigins = "codec.origins"

	DevStateDir    = "dev.state_dir"
	DevUIPort      = "dev.ui_port"
	DevMetricsPort = "dev.metrics_port"

	SnapshotsSessionMB = "snapshots.session_mb"
	SnapshotsMaxMB     = "snapshots.max_mb"
	SnapshotsKeepMB    = "snapshots.keep_mb"
	SnapshotsKeepFor   = "snapshots.keep_for"

	WorkspacesRoot         = "workspaces.root"
	WorkspacesGitHubURL    = "workspaces.github_url"
	WorkspacesGitToken     = "workspaces.git_token"
	WorkspacesGitTokenHost = "workspaces.git_token_host"
	WorkspacesPush         = "workspaces.push"
	WorkspacesKeepFor      = "workspaces.keep_for"
	WorkspacesCacheMB      = "workspaces.cache_mb"
	WorkspacesRecordMB     = "workspaces.record_mb"

	GatewayProvider         = "gateway.provider"
	GatewayBaseURL          = "gateway.base_url"
	GatewayAPIKey           = "gateway.api_key"
	GatewayModel            = "gateway.model"
	GatewayPriceInput       = "gateway.price.input"
	GatewayPriceOutput      = "gateway.price.output"
	GatewayFake             = "gateway.fake"
	GatewayRetryBase        = "gateway.retry.base"
	GatewayRetryCap         = "gateway.retry.cap"
	GatewayRetryFixedJitter = "gateway.retry.fixed_jitter"
	GatewayFallbacks        = "gateway.fallbacks"
	GatewayKeys             = "gateway.keys"

	LimitsMaxTurns      = "limits.max_turns"
	LimitsMaxDuration   = "limits.max_duration"
	LimitsMaxTokens     = "limits.max_tokens"
	LimitsContextTokens = "limits.context_tokens"
	// LimitsDelegationDepth and LimitsMaxChildren shape sub-agents (the delegate tool).
	LimitsDelegationDepth = "limits.delegation_depth"
	LimitsMaxChildren     = "limits.max_children"

	ToolsApproval           = "tools.approval"
	ToolsAllow              = "tools.allow"
	ToolsDeny               = "tools.deny"
	ToolsCommands           = "tools.commands"
	ToolsCommandTimeout     = "tools.command_timeout"
	ToolsApprovalTimeout    = "tools.approval_timeout"
	ToolsOutputCap          = "tools.output_cap"
	ToolsSandbox            = "tools.sandbox"
	ToolsNetwork            = "tools.network"
	ToolsSandboxCache       = "tools.sandbox_cache"
	ToolsLimitsProcesses    = "tools.limits.processes"
	ToolsLimitsMemoryMB     = "tools.limits.memory_mb"
	ToolsLimitsCPUTime      = "tools.limits.cpu_time"
	ToolsLimitsFileSizeMB   = "tools.limits.file_size_mb"
	ToolsBreakerFailures    = "tools.breaker.failures"
	ToolsBreakerWindow      = "tools.breaker.window"
	ToolsBreakerCooldown    = "tools.breaker.cooldown"
	ToolsFallbacks          = "tools.fallbacks"
	StoreBackend            = "store.backend"
	StorePath               = "store.path"
	StoreDSN                = "store.dsn"
	EscalationDeadline      = "escalation.deadline"
	EscalationDefaultAction = "escalation.default_action"
	EscalationChannels      = "escalation.channels"

	EscalationSlackBotToken      = "escalation.slack.bot_token"
	EscalationSlackSigningSecret = "escalation.slack.signing_secret"
	EscalationSlackChannel       = "escalation.slack.channel"
	EscalationSlackTeamID        = "escalation.slack.team_id"
	EscalationSlackApprovers     = "escalation.slack.approvers"
	EscalationSlackListen        = "escalation.slack.listen"
	EscalationSlackAPIURL        = "escalation.slack.api_url"
	EscalationGitHubToken        = "escalation.github.token"
	EscalationGitHubBaseURL      = "escalation.github.base_url"
	EscalationGitHubRepo         = "escalation.github.repo"
	EscalationGitHubPR           = "escalation.github.pr"
	EscalationGitHubSecret       = "escalation.github.webhook_secret"
	EscalationGitHubListen       = "escalation.github.listen"
	EscalationGitHubTeams        = "escalation.github.teams"
	EscalationGitHubJobs         = "escalation.github.jobs"
	EscalationGitHubLogin        = "escalation.github.login"
	EscalationWebhookURL         = "escalation.webhook.url"
	EscalationWebhookSecret      = "escalation.webhook.secret"

	MCPServers     = "mcp.servers"
	MetricsAddress = "metrics.address"
	EventsInterval = "events.interval"
	Log            = "log"
)

// NoUI is the temporal.ui_url that says no Web UI runs (deploy/run-cluster.sh's cluster): the
// starter and escalation notices then link to none rather than to a dev server's port.
const NoUI = "off"

// breakerDefaults are the breaker's own defaults, reached through the contract's field so that
// this package imports nothing of Keel's but the contract.
var breakerDefaults = contract.ToolPolicy{}.Breaker.WithDefaults()

// settings is the table, in the order of the docs and the example file (keys that share a parent
// stay together, as the YAML nests them).
var settings = []Setting{
	{Name: TemporalAddress, Default: "127.0.0.1:7233", Env: []string{"TEMPORAL_ADDRESS"},
		Flag: "temporal-address", FlagUsage: "Temporal frontend host:port", FlagIn: Starter | SlackBot | GitHubBot, ReadBy: Worker | Starter | SlackBot | GitHubBot,
		Doc: "Temporal frontend", into: func(d *draft) any { return &d.Temporal.Address }},
	{Name: TemporalNamespace, Default: "default", Env: []string{"TEMPORAL_NAMESPACE"},
		Flag: "namespace", FlagUsage: "Temporal namespace", FlagIn: Starter | SlackBot | GitHubBot, ReadBy: Worker | Starter | SlackBot | GitHubBot,
		Doc: "Temporal namespace", into: func(d *draft) any { return &d.Temporal.Namespace }},
	{Name: TemporalTaskQueue, Default: contract.TaskQueue, ReadBy: Worker | Starter | GitHubBot,
		Doc: "the queue workers poll", into: func(d *draft) any { return &d.Temporal.TaskQueue }},
	{Name: TemporalUIURL, Default: "", ReadBy: Worker | Starter,
		DefaultDoc: "empty: `http://` + the host of `temporal.address` + `:` + `dev.ui_port`",
		Doc:        "Web UI base, for links in the starter and in escalation notices; `" + NoUI + "` where no Web UI runs: no links",
		Hint:       "Web UI base for links; empty: http://<address host>:<dev.ui_port>; " + NoUI + ": no links",
		into:       func(d *draft) any { return &d.Temporal.UIURL }},
	{Name: TemporalTurnsPerRun, Kind: Count, Default: 0, ReadBy: Starter,
		Doc:  "continue a session as new every N turns (0: when the server suggests it)",
		Hint: "continue as new every N turns; 0: when the server suggests it",
		into: func(d *draft) any { return &d.Temporal.TurnsPerRun }},
	{Name: TemporalFallbackHeartbeat, Kind: Duration, Default: "200ms", ReadBy: Worker,
		Doc: "how often running model calls and tools heartbeat when the server cannot push cancellation (no worker commands; " +
			"the worker says so at start); with worker commands they heartbeat every 15 s, for liveness only (docs/failure-handling.md)",
		Hint: "heartbeat cadence when the server cannot push cancellation to the worker",
		into: func(d *draft) any { return &d.Temporal.FallbackHeartbeat }},
	{Name: TemporalDeployment, Default: "", DefaultDoc: "empty: no Worker Versioning", ReadBy: Worker | Starter,
		Doc: "the Worker Deployment a worker belongs to: set, the worker is versioned (with `temporal.build_id`), takes only " +
			"the work its version is current or ramping for, and makes itself current when the deployment has no current " +
			"version yet; `starter release` moves the rest ([operations](operations.md#releasing-a-new-build))",
		Hint: "Worker Deployment name; set it (with temporal.build_id) to release builds with Worker Versioning",
		into: func(d *draft) any { return &d.Temporal.Deployment }},
	{Name: TemporalBuildID, Default: "", ReadBy: Worker,
		Doc: "this worker's build within `temporal.deployment` (required with it): one ID per build of the code, e.g. the " +
			"commit; two builds that differ must never share one",
		Hint: "this build's ID within temporal.deployment, e.g. the commit",
		into: func(d *draft) any { return &d.Temporal.BuildID }},
	{Name: TemporalHeartbeatTimeout, Kind: Duration, Default: "0", ReadBy: Starter,
		DefaultDoc: "`0`: " + contract.DefaultHeartbeatTimeout.String(),
		Doc: "how long a session's running model call or tool may go without a heartbeat before Temporal declares its worker dead: " +
			"a dead worker's call is noticed within it, and a shorter one costs more heartbeats on calls longer than a third of it " +
			"([operations](operations.md#failover-speed)); fixed for a session when it starts",
		Hint: "a dead worker's calls are noticed within it; 0: " + contract.DefaultHeartbeatTimeout.String(),
		into: func(d *draft) any { return &d.Temporal.HeartbeatTimeout }},
	{Name: TemporalProfile, Default: "", Env: []string{"TEMPORAL_PROFILE"}, ReadBy: Worker | Starter | SlackBot | GitHubBot,
		DefaultDoc: "empty: the profile `default`",
		Doc: "the profile of the Temporal client configuration file (`temporal.toml`, at `TEMPORAL_CONFIG_FILE` or the user's " +
			"config folder) to connect with; the `TEMPORAL_*` variables apply over it and Keel's `temporal.*` keys over both " +
			"([deployment](deployment.md#temporal-cloud))",
		into: func(d *draft) any { return &d.Temporal.Profile }},
	{Name: TemporalAPIKey, Default: "", ReadBy: Worker | Starter | SlackBot | GitHubBot,
		Doc:  "API key sent as the bearer of every call (Temporal Cloud); implies TLS. Keep it in the environment (or `TEMPORAL_API_KEY`)",
		Hint: "better in KEEL_TEMPORAL_API_KEY or TEMPORAL_API_KEY", into: func(d *draft) any { return &d.Temporal.APIKey }},
	{Name: TemporalConnectTimeout, Kind: Duration, Default: "10s", ReadBy: Worker | Starter | SlackBot | GitHubBot,
		Doc:  "how long connecting and the first health check may take before the program stops, saying which setting to check",
		into: func(d *draft) any { return &d.Temporal.ConnectTimeout }},
	{Name: TemporalTLSEnabled, Kind: Bool, Default: false, ReadBy: Worker | Starter | SlackBot | GitHubBot,
		Doc:  "connect with TLS, verifying the server against the system's roots, even when no CA or certificate is set",
		into: func(d *draft) any { return &d.Temporal.TLS.Enabled }},
	{Name: TemporalTLSCA, Kind: Path, Default: "", ReadBy: Worker | Starter | SlackBot | GitHubBot,
		Doc:  "PEM file of the CA that signed the server's certificate (self-hosted TLS); implies TLS",
		into: func(d *draft) any { return &d.Temporal.TLS.CA }},
	{Name: TemporalTLSCert, Kind: Path, Default: "", ReadBy: Worker | Starter | SlackBot | GitHubBot,
		Doc:  "PEM file of the client certificate, for mTLS (with `temporal.tls.key`); implies TLS",
		into: func(d *draft) any { return &d.Temporal.TLS.Cert }},
	{Name: TemporalTLSKey, Kind: Path, Default: "", ReadBy: Worker | Starter | SlackBot | GitHubBot,
		Doc:  "PEM file of the client certificate's private key",
		into: func(d *draft) any { return &d.Temporal.TLS.Key }},
	{Name: TemporalTLSServerName, Default: "", ReadBy: Worker | Starter | SlackBot | GitHubBot,
		DefaultDoc: "empty: the host of `temporal.address`",
		Doc:        "name the server's certificate must carry, when it differs from the address's host",
		into:       func(d *draft) any { return &d.Temporal.TLS.ServerName }},

	{Name: DevStateDir, Kind: Path, Default: "", Flag: "state-dir", FlagIn: Starter, ReadBy: Worker | Starter,
		FlagUsage:  "folder for the dev server's state and the local store, outside every work directory; default: the user's state folder",
		DefaultDoc: "`$XDG_STATE_HOME/keel`, else `~/.local/state/keel`",
		Doc: "dev server SQLite file, local store, demo workspaces, and `deploy/run-cluster.sh`'s files (`cluster/`); " +
			"never inside a work directory ([below](#keels-own-files-and-the-work-directory))",
		Hint: "dev server SQLite file, local transcript store, demo workspaces, native cluster;\n" +
			"empty: $XDG_STATE_HOME/keel, else ~/.local/state/keel. Never inside a work directory",
		into: func(d *draft) any { return &d.Dev.StateDir }},
	{Name: DevUIPort, Kind: Count, Default: 8233, ReadBy: Starter,
		Doc: "Web UI port of a dev server the starter starts", into: func(d *draft) any { return &d.Dev.UIPort }},
	{Name: DevMetricsPort, Kind: Count, Default: 0, DefaultDoc: "`0` (off)", ReadBy: Starter,
		Doc: "serves the started dev server's own Prometheus metrics on `127.0.0.1:PORT/metrics`, among them the `action` " +
			"counter (docs/benchmarks.md)",
		Hint: "the started dev server's Prometheus metrics on 127.0.0.1:PORT/metrics; 0: off",
		into: func(d *draft) any { return &d.Dev.MetricsPort }},

	{Name: SnapshotsSessionMB, Kind: MiB, Default: 1024, ReadBy: Worker | Starter,
		Doc: "the most one session's snapshots of its work directory (for `fork --turn`) may add to `dev.state_dir` over its life; " +
			"past it a snapshot lists the changed files without their contents, and says so ([operations](operations.md#snapshots)); 0: no bound",
		Hint: "what one session's work directory snapshots may add to the state directory; 0: no bound",
		into: func(d *draft) any { return &d.Snapshots.SessionMax }},
	{Name: SnapshotsMaxMB, Kind: MiB, Default: 10240, ReadBy: Worker | Starter,
		Doc:  "the most all snapshots in `dev.state_dir` may take; past it new contents are left out, as above, until `starter prune` frees space; 0: no bound",
		Hint: "what all work directory snapshots may take; 0: no bound",
		into: func(d *draft) any { return &d.Snapshots.TotalMax }},
	{Name: SnapshotsKeepMB, Kind: MiB, Default: 2048, ReadBy: Starter,
		Doc:  "`starter prune` removes the oldest snapshots until all of them take at most this much; 0: any size",
		Hint: "starter prune's size to bring the snapshots to; 0: any size",
		into: func(d *draft) any { return &d.Snapshots.KeepBytes }},
	{Name: SnapshotsKeepFor, Kind: Duration, Default: "336h", ReadBy: Starter,
		Doc:  "`starter prune` removes every snapshot of a session whose newest one is older than this; 0: any age",
		Hint: "starter prune's age past which a session's snapshots go; 0: any age",
		into: func(d *draft) any { return &d.Snapshots.KeepFor }},

	{Name: WorkspacesRoot, Kind: Path, Default: "", DefaultDoc: "`<state_dir>/workspaces`", ReadBy: Worker,
		Doc: "where a worker keeps its per-repository git caches and the workspaces of sessions started with `--repo` and `--commit` or `--ref` " +
			"([operations](operations.md#workspaces-from-git)); never inside a work directory",
		Hint: "per-repository git caches and sessions' workspaces; empty: <state_dir>/workspaces",
		into: func(d *draft) any { return &d.Workspaces.Root }},
	{Name: WorkspacesGitHubURL, Default: contract.DefaultGitHubURL, ReadBy: Worker,
		Doc: "the GitHub a repository written `owner/name` (`--repo owner/name`, GitHub jobs) is fetched from and pushed to, as " +
			"`URL/owner/name.git`; GitHub Enterprise Server: `https://HOST`. https, or plain http on loopback only, with no credentials in it",
		Hint: "where owner/name repositories live; GitHub Enterprise Server: https://HOST", into: func(d *draft) any { return &d.Workspaces.GitHubURL }},
	{Name: WorkspacesGitToken, Default: "", ReadBy: Worker,
		Doc: "the token a worker fetches sessions' repositories with, sent as HTTP basic auth (`x-access-token`) to `workspaces.git_token_host` only, " +
			"never written to disk or shown to a session",
		Hint: "better in KEEL_WORKSPACES_GIT_TOKEN", into: func(d *draft) any { return &d.Workspaces.GitToken }},
	{Name: WorkspacesGitTokenHost, Default: "", DefaultDoc: "the host of `workspaces.github_url`", ReadBy: Worker,
		Doc:  "the host (`host` or `host:port`) `workspaces.git_token` is sent to, over https (plain http on loopback only)",
		Hint: "the host the git token is sent to; empty: the host of workspaces.github_url", into: func(d *draft) any { return &d.Workspaces.GitTokenHost }},
	{Name: WorkspacesPush, Kind: Bool, Default: contract.DefaultWorkspacesPush, ReadBy: Worker,
		Doc: "push the changes of a session that ran in a workspace made from git, when it ends, to its origin as the branch `keel/<session>` " +
			"with the worker's token ([operations](operations.md#workspaces-from-git)); false keeps them on the worker",
		Hint: "false: sessions' changes stay on the worker, no branch is pushed", into: func(d *draft) any { return &d.Workspaces.Push }},
	{Name: WorkspacesKeepFor, Kind: Duration, Default: contract.DefaultWorkspacesKeepFor, ReadBy: Starter,
		Doc: "`starter prune` removes the workspaces no tool has used for this long from the worker, and empties the workspaces recorded " +
			"in the store whose newest record is older (a session or fork that needs one later is refused, saying so); 0: any age",
		Hint: "starter prune's age past which an unused workspace goes; 0: any age", into: func(d *draft) any { return &d.Workspaces.KeepFor }},
	{Name: WorkspacesCacheMB, Kind: MiB, Default: contract.DefaultWorkspacesCacheMB, ReadBy: Worker | Starter,
		Doc: "bounds the per-repository git caches together: after a fetch, and on `starter prune`, the least recently used caches go " +
			"until they fit (a later session fetches its repository again); 0: any size",
		Hint: "the git caches' size bound; 0: any size", into: func(d *draft) any { return &d.Workspaces.CacheBytes }},
	{Name: WorkspacesRecordMB, Kind: MiB, Default: contract.DefaultWorkspacesRecordMB, ReadBy: Worker,
		Doc: "bounds the files of a workspace recorded in the store after a tool call (the repository's packs aside): a workspace over it " +
			"is recorded as missing, the user is told, and the session cannot continue on another worker from it " +
			"([operations](operations.md#workspaces-in-the-store)); 0: any size",
		Hint: "a recorded workspace's size bound; 0: any size", into: func(d *draft) any { return &d.Workspaces.RecordBytes }},

	{Name: GatewayProvider, Kind: Choice, OneOf: contract.Providers, Default: contract.ProviderOpenAI, ReadBy: Worker | Starter,
		Flag: "provider", FlagIn: Starter, FlagUsage: "model provider wire format: " + strings.Join(contract.Providers, ", "),
		Doc:  providersDoc() + "; on `starter run` the flag sets the session's endpoint instead (below)",
		Hint: "the wire format: " + orList(contract.Providers),
		into: func(d *draft) any { return &d.Gateway.Provider }},
	{Name: GatewayBaseURL, Default: "", DefaultDoc: "provider's", ReadBy: Worker | Starter,
		Flag: "base-url", FlagIn: Starter,
		FlagUsage: "the session's provider base URL, for OpenAI-compatible gateways with /v1; default: the workers' own",
		Doc: "for OpenAI-compatible gateways (both `openai` and `openai-responses`) include `/v1`; on `starter run` the flag " +
			"sets the session's endpoint",
		Hint: "empty: the provider's public API", into: func(d *draft) any { return &d.Gateway.BaseURL }},
	{Name: GatewayAPIKey, Default: "", ReadBy: Worker, Required: Worker, Unless: GatewayFake,
		Doc:  "keep it in the environment. Sessions name it `default`; it is only ever sent to this worker's own `gateway.base_url`",
		Hint: "better in KEEL_GATEWAY_API_KEY", into: func(d *draft) any { return &d.Gateway.APIKey }},
	{Name: GatewayModel, Default: "", DefaultDoc: "the provider's: " + defaultModelsDoc(), ReadBy: Worker | Starter,
		Flag: "model", FlagIn: Starter, FlagUsage: "model alias",
		Doc:  "model alias sent to the provider; on `starter run` the flag sets the session's endpoint too",
		into: func(d *draft) any { return &d.Gateway.Model }},
	{Name: GatewayPriceInput, Kind: Price, Default: 0, ReadBy: Starter,
		Doc:  "what a million input tokens cost, in your currency; with `gateway.price.output`, the end of a session shows its cost; 0: no cost shown",
		Hint: "per million input tokens (cached ones counted as input); 0: no cost shown",
		into: func(d *draft) any { return &d.Gateway.Price.Input }},
	{Name: GatewayPriceOutput, Kind: Price, Default: 0, ReadBy: Starter,
		Doc:  "what a million output tokens cost, in the same currency",
		Hint: "per million output tokens", into: func(d *draft) any { return &d.Gateway.Price.Output }},
	{Name: GatewayFake, Kind: Bool, Default: false, ReadBy: Worker,
		Doc:  "use the built-in scripted gateway (the demo and `dev` always do)",
		Hint: "true: run the built-in scripted gateway instead", into: func(d *draft) any { return &d.Gateway.Fake }},
	{Name: GatewayRetryBase, Kind: Duration, Default: contract.DefaultRetryBase, ReadBy: Starter,
		Doc: "backoff base", Hint: "equal-jitter backoff: window = min(cap, base*2^(attempt-1))",
		into: func(d *draft) any { return (*time.Duration)(&d.Gateway.Retry.Base) }},
	{Name: GatewayRetryCap, Kind: Duration, Default: contract.DefaultRetryCap, ReadBy: Starter,
		Doc: "backoff cap (a server's Retry-After may exceed it)", into: func(d *draft) any { return (*time.Duration)(&d.Gateway.Retry.Cap) }},
	{Name: GatewayRetryFixedJitter, Kind: Fraction, Default: "", ReadBy: Worker,
		Doc: "empty draws the jitter at random (production); a number from 0 to 1 fixes the draw in this process's workers, " +
			"so tests can reproduce a schedule (0.5: 300, 600, 1,200 ms)",
		Hint: "empty: random jitter (keep it so); 0 to 1 fixes the draw, for tests",
		into: func(d *draft) any { return &d.Gateway.FixedJitter }},
	{Name: GatewayFallbacks, Kind: Object, Default: []any{}, Shape: "a list of {provider, base_url, model, api_key_env}", ReadBy: Worker,
		Doc: "models tried in order when the primary is down: `[{provider, base_url, model, api_key_env}]`, `provider` any of " +
			"the three above, the key read from the named environment variable (see failure-handling.md)",
		Hint: "tried in order when the primary is down, e.g.\n" +
			"[{provider: anthropic, base_url: https://api.anthropic.com, model: claude-sonnet-4-5, api_key_env: ANTHROPIC_API_KEY}]",
		into: func(d *draft) any { return &d.Gateway.Fallbacks }},
	{Name: GatewayKeys, Kind: Object, Default: map[string]any{}, Shape: "a map of NAME: {env: VARIABLE, base_url: URL}", ReadBy: Worker,
		Doc: "API keys sessions may name for their own endpoint (`starter run --api-key-ref NAME`): `{NAME: {env: VARIABLE, " +
			"base_url: URL}}`, the key read from the variable, sent only to that base URL ([below](#a-sessions-model-endpoint))",
		Hint: "keys sessions may name (starter run --api-key-ref NAME), each sent only to its base_url, e.g.\n" +
			"{claude: {env: ANTHROPIC_API_KEY, base_url: https://api.anthropic.com}}",
		into: func(d *draft) any { return &d.Gateway.Keys }},

	{Name: LimitsMaxTurns, Kind: Count, Default: 40, ReadBy: Starter,
		Flag: "max-turns", FlagIn: Starter, FlagUsage: "stop after this many turns",
		Doc: "0 means no limit", into: func(d *draft) any { return &d.Limits.MaxTurns }},
	{Name: LimitsMaxDuration, Kind: Duration, Default: "30m", ReadBy: Starter,
		Flag: "max-duration", FlagIn: Starter, FlagUsage: "stop after this much time, e.g. 90s",
		Doc: "a workflow timer raced against every turn", into: func(d *draft) any { return (*time.Duration)(&d.Limits.MaxDuration) }},
	{Name: LimitsMaxTokens, Kind: Count, Default: 500000, ReadBy: Starter,
		Flag: "max-tokens", FlagIn: Starter, FlagUsage: "stop once this many tokens were used",
		Doc: "input + output tokens as the provider reports them", into: func(d *draft) any { return &d.Limits.MaxTokens }},
	{Name: LimitsContextTokens, Kind: Count, Default: 0, DefaultDoc: "`0` (off)", ReadBy: Starter,
		Flag: "context-tokens", FlagIn: Starter, FlagUsage: "summarise the oldest turns once a model call's input nears this many tokens",
		Doc: "the model's context window: when a model call's input reaches 80 % of it, the oldest turns are summarised for " +
			"later calls (the full transcript is kept; see [architecture.md](architecture.md#compaction)). Not a hard limit",
		Hint: "the model's context window: at 80 % the oldest turns are summarised; 0 never",
		into: func(d *draft) any { return &d.Limits.ContextTokens }},
	{Name: LimitsDelegationDepth, Kind: Count, Default: contract.DefaultDelegationDepth, ReadBy: Starter,
		Doc: "how many levels of sub-agents a session may start under it with the `delegate` tool; 0 offers no `delegate` tool " +
			"(see [subagents.md](subagents.md))",
		Hint: "levels of sub-agents a session may start; 0 offers no delegate tool",
		into: func(d *draft) any { return &d.Limits.DelegationDepth }},
	{Name: LimitsMaxChildren, Kind: Count, Default: contract.DefaultMaxChildren, ReadBy: Starter,
		Doc: "how many sub-agents may run at once in a session's whole tree", into: func(d *draft) any { return &d.Limits.MaxChildren }},

	{Name: ToolsApproval, Kind: Choice, OneOf: contract.ApprovalModes, Default: string(contract.ApprovalNever), ReadBy: Starter,
		Flag: "approval", FlagIn: Starter, FlagUsage: "which tool calls wait for your approval: never, writes or always",
		Doc: "which tool calls wait for a person's approval", into: func(d *draft) any { return (*string)(&d.Tools.Approval) }},
	{Name: ToolsAllow, Kind: List, Default: []string{}, ReadBy: Starter,
		Doc: "tools that never need approval", into: func(d *draft) any { return &d.Tools.Allow }},
	{Name: ToolsDeny, Kind: List, Default: []string{}, ReadBy: Starter,
		Doc: "tools that are refused (a refusal escalates as a policy violation)", into: func(d *draft) any { return &d.Tools.Deny }},
	{Name: ToolsCommands, Kind: List, Default: []string{}, ReadBy: Starter,
		Doc: "programs `run_command` may start; empty allows any", Hint: "programs run_command may start; empty allows any",
		into: func(d *draft) any { return &d.Tools.Commands }},
	{Name: ToolsCommandTimeout, Kind: Duration, Default: contract.DefaultCommandTimeout, ReadBy: Starter,
		Doc: "one command's limit; then its process group is stopped", into: func(d *draft) any { return (*time.Duration)(&d.Tools.CommandTimeout) }},
	{Name: ToolsApprovalTimeout, Kind: Duration, Default: "10m", ReadBy: Starter,
		Doc: "an approval not given by then is a denial", into: func(d *draft) any { return (*time.Duration)(&d.Tools.ApprovalTimeout) }},
	{Name: ToolsOutputCap, Kind: Count, Default: contract.DefaultOutputCap, ReadBy: Worker,
		Doc: "bytes of command output kept; the result says what was cut", into: func(d *draft) any { return &d.WorkerTools.OutputCap }},
	{Name: ToolsSandbox, Kind: Choice, OneOf: []string{"on", "off", "true", "false"}, Default: "on", ReadBy: Worker | Starter,
		Doc: "`on` runs every `run_command` in the sandbox (see [tools.md](tools.md#the-sandbox)); `off` runs commands " +
			"unconfined, as the worker's user, with its files and network: **unsafe**, for systems whose kernel refuses user " +
			"namespaces (`true` and `false` mean the same)",
		Hint: "on | off (off runs commands unconfined: unsafe)", into: func(d *draft) any { return &d.sandboxMode }},
	{Name: ToolsNetwork, Kind: Choice, OneOf: []string{sandboxdefaults.NetworkNone, sandboxdefaults.NetworkHost},
		Default: sandboxdefaults.NetworkNone, ReadBy: Worker,
		Doc: "`none`: a command's network namespace has only its own loopback; `host`: the worker's network (explicit opt-in, " +
			"e.g. for tasks that fetch modules)",
		Hint: "none | host (host lets commands reach the network, loopback included)",
		into: func(d *draft) any { return &d.sandbox.Network }},
	{Name: ToolsSandboxCache, Kind: Path, Default: "", DefaultDoc: "`<user cache>/keel/sandbox`", ReadBy: Worker | Starter,
		Doc: "folder mounted read-write at `/cache` inside the sandbox for Go's build and module caches; a folder of its own " +
			"([below](#keels-own-files-and-the-work-directory))",
		Hint: "empty: <user cache>/keel/sandbox, mounted at /cache for Go's caches; a folder of its\n" +
			"own (not a system folder, the home folder, or above the work directory or state)",
		into: func(d *draft) any { return &d.sandbox.CacheDir }},
	{Name: ToolsLimitsProcesses, Kind: Count, Default: sandboxdefaults.Processes, ReadBy: Worker,
		Doc: "processes and threads alive at once in one command, counted per sandbox (and by its cgroup where the worker " +
			"has one); a worker that is not root gives each command a share of what its own user may still start",
		into: func(d *draft) any { return &d.sandbox.Processes }},
	{Name: ToolsLimitsMemoryMB, Kind: MiB, Default: sandboxdefaults.Memory >> 20, ReadBy: Worker,
		Doc: "memory of one command as a whole, shared memory and `/tmp` included, where the worker has a cgroup for it; " +
			"in any case what each of its processes may write to (heap and other private mappings); also the size of its `/tmp`",
		Hint: "per command where there is a cgroup, else per process; also the size of its /tmp",
		into: func(d *draft) any { return &d.sandbox.Memory }},
	{Name: ToolsLimitsCPUTime, Kind: Duration, Default: sandboxdefaults.CPUTime, ReadBy: Worker,
		Doc: "CPU time each process of a command may use", Hint: "per process",
		into: func(d *draft) any { return &d.sandbox.CPUTime }},
	{Name: ToolsLimitsFileSizeMB, Kind: MiB, Default: sandboxdefaults.FileSize >> 20, ReadBy: Worker,
		Doc: "largest file a command may write", into: func(d *draft) any { return &d.sandbox.FileSize }},
	{Name: ToolsBreakerFailures, Kind: Count, Default: breakerDefaults.Failures, ReadBy: Starter,
		Doc:  "an MCP server's breaker opens after that many failures within `tools.breaker.window`",
		into: func(d *draft) any { return &d.Tools.Breaker.Failures }},
	{Name: ToolsBreakerWindow, Kind: Duration, Default: breakerDefaults.Window.Std(), ReadBy: Starter,
		Doc: "how long a failure counts towards `tools.breaker.failures`", into: func(d *draft) any { return (*time.Duration)(&d.Tools.Breaker.Window) }},
	{Name: ToolsBreakerCooldown, Kind: Duration, Default: breakerDefaults.Cooldown.Std(), ReadBy: Starter,
		Doc: "how long an open breaker refuses calls before it lets one probe through", Hint: "then one probe is let through",
		into: func(d *draft) any { return (*time.Duration)(&d.Tools.Breaker.Cooldown) }},
	{Name: ToolsFallbacks, Kind: Map, Default: map[string]string{}, ReadBy: Starter,
		Doc:  "tool → tool offered while the first one's breaker is open, e.g. `{flaky_lookup: read_file}`",
		Hint: "e.g. {flaky_lookup: read_file}: offered while a breaker is open",
		into: func(d *draft) any { return &d.Tools.Fallbacks }},

	{Name: CodecKeys, Kind: List, Default: []string{}, ReadBy: Worker | Starter | SlackBot | GitHubBot,
		Doc: "encryption keys as `ID=env:VARIABLE` or `ID=file:PATH` (32 bytes: base64, hex or raw), the encrypting key first: " +
			"with one, every Temporal payload and the store's transcripts and large payloads are encrypted (AES-256-GCM); " +
			"keep older keys behind the new one so earlier sessions still decrypt ([deployment](deployment.md#encrypted-payloads))",
		Hint: "e.g. [k2=file:/etc/keel/k2.key, k1=env:KEEL_KEY_K1]; empty: payloads in plain text",
		into: func(d *draft) any { return &d.Codec.Keys }},
	{Name: CodecListen, Default: "127.0.0.1:8081", ReadBy: Starter,
		Flag: "codec-listen", FlagIn: Starter, FlagUsage: "address the codec server listens on",
		Doc:  "address `starter codec-server` (and `starter dev` with a key) serves `/encode` and `/decode` on",
		into: func(d *draft) any { return &d.Codec.Listen }},
	{Name: CodecToken, Default: "", ReadBy: Starter,
		Doc:  "token the codec server requires as `Authorization: Bearer …`; empty: anyone who can reach it decodes. Keep it in the environment",
		Hint: "better in KEEL_CODEC_TOKEN", into: func(d *draft) any { return &d.Codec.Token }},
	{Name: CodecOrigins, Kind: List, Default: []string{}, ReadBy: Starter,
		DefaultDoc: "empty: the origin of `temporal.ui_url`",
		Doc:        "browser origins the codec server answers (CORS), such as the Web UI's `http://127.0.0.1:8233`",
		into:       func(d *draft) any { return &d.Codec.Origins }},

	{Name: StoreBackend, Kind: Choice, OneOf: []string{"file", "postgres"}, Default: "file", ReadBy: Worker | Starter,
		Doc: "where transcripts are kept", Hint: "file (under dev.state_dir/store) or postgres",
		into: func(d *draft) any { return &d.Store.Backend }},
	{Name: StorePath, Kind: Path, Default: "", DefaultDoc: "`<state_dir>/store`", ReadBy: Worker | Starter,
		Doc: "folder of the file store", into: func(d *draft) any { return &d.Store.Path }},
	{Name: StoreDSN, Default: "", ReadBy: Worker | Starter,
		Doc: "PostgreSQL connection string, required for `postgres`", Hint: "postgres://user@host:5432/db",
		into: func(d *draft) any { return &d.Store.DSN }},

	{Name: EscalationDeadline, Kind: Duration, Default: "30m", ReadBy: Starter,
		Doc: "how long an escalation waits", into: func(d *draft) any { return (*time.Duration)(&d.Escalation.Deadline) }},
	{Name: EscalationDefaultAction, Kind: Choice, OneOf: []string{contract.ActionAbort, contract.ActionRetry},
		Default: contract.ActionAbort, ReadBy: Starter,
		Doc: "taken at the deadline", Hint: "abort | retry, taken at the deadline",
		into: func(d *draft) any { return &d.Escalation.DefaultAction }},
	{Name: EscalationChannels, Kind: List, Default: []string{}, ReadBy: Worker | Starter,
		Doc:  codeList(contract.Channels) + "; notified in order across the deadline (docs/escalation.md)",
		Hint: strings.Join(contract.Channels, ", ") + ", notified in order across the deadline",
		into: func(d *draft) any { return &d.Escalation.Channels }},
	{Name: EscalationSlackBotToken, Default: "", ReadBy: Worker | SlackBot, Required: SlackBot, Channel: contract.ChannelSlack,
		Doc:  "the Slack app's bot token (`xoxb-…`): the worker posts notices with it, the bot rewrites them",
		into: func(d *draft) any { return &d.Escalation.Slack.BotToken }},
	{Name: EscalationSlackSigningSecret, Default: "", ReadBy: SlackBot, Required: SlackBot,
		Doc:  "the Slack app's signing secret: the bot refuses any request not signed with it",
		into: func(d *draft) any { return &d.Escalation.Slack.SigningSecret }},
	{Name: EscalationSlackChannel, Default: "", ReadBy: Worker, Channel: contract.ChannelSlack,
		Doc: "the channel ID (`C…`) notices are posted to", into: func(d *draft) any { return &d.Escalation.Slack.Channel }},
	{Name: EscalationSlackTeamID, Default: "", ReadBy: SlackBot, Required: SlackBot,
		Flag: "team", FlagIn: SlackBot, FlagUsage: "Slack team ID whose requests are accepted",
		Doc:  "the Slack team (`T…`) whose requests the bot accepts; any other workspace is refused",
		into: func(d *draft) any { return &d.Escalation.Slack.TeamID }},
	{Name: EscalationSlackApprovers, Kind: List, Default: []string{}, ReadBy: SlackBot, Required: SlackBot, Why: "nobody could answer",
		Flag: "approvers", FlagIn: SlackBot, FlagUsage: "comma-separated Slack user IDs allowed to answer",
		Doc:  "Slack member IDs (`U…`) who may answer, stop or ask for status; nobody else may",
		into: func(d *draft) any { return &d.Escalation.Slack.Approvers }},
	{Name: EscalationSlackListen, Default: "127.0.0.1:3000", ReadBy: SlackBot,
		Flag: "listen", FlagIn: SlackBot, FlagUsage: "listen address",
		Doc:  "address the bot serves Slack's requests on; `0.0.0.0:3000` in a container",
		into: func(d *draft) any { return &d.Escalation.Slack.Listen }},
	{Name: EscalationSlackAPIURL, Default: "", ReadBy: Worker | SlackBot,
		Flag: "slack-api-url", FlagIn: SlackBot, FlagUsage: "Slack Web API base URL override",
		Doc:  "Slack's Web API base URL, only to point at a proxy or a test server",
		into: func(d *draft) any { return &d.Escalation.Slack.APIURL }},
	// The pull request is the session's own; escalation.github.repo is only a default.
	{Name: EscalationGitHubToken, Default: "", ReadBy: Worker | GitHubBot, Required: GitHubBot, Channel: contract.ChannelGitHub,
		Doc: "a token that may read the pull request and write issue comments and labels (the GitHub bot: also read collaborators' permissions and add reactions; docs/github.md)", into: func(d *draft) any { return &d.Escalation.GitHub.Token }},
	{Name: EscalationGitHubBaseURL, Default: "https://api.github.com", ReadBy: Worker | GitHubBot,
		Doc: "GitHub's API; GitHub Enterprise Server: `https://HOST/api/v3`", into: func(d *draft) any { return &d.Escalation.GitHub.BaseURL }},
	{Name: EscalationGitHubRepo, Default: "", ReadBy: Worker,
		Doc: "`owner/name` of the default pull request, for sessions that name none (a session's own, from `starter run --pr`, GitHub Actions or a pull request job, wins)", Hint: "owner/name", into: func(d *draft) any { return &d.Escalation.GitHub.Repo }},
	{Name: EscalationGitHubPR, Kind: Count, Default: 0, ReadBy: Worker,
		Doc: "the default pull request's number", into: func(d *draft) any { return &d.Escalation.GitHub.PR }},
	{Name: EscalationGitHubLogin, Default: "", DefaultDoc: "empty: learned from `GET /user` once", ReadBy: Worker | GitHubBot,
		Doc:  "the login the token comments as (a GitHub App: `APP-SLUG[bot]`); only comments by it count as Keel's own ([github](github.md#what-the-bot-trusts))",
		into: func(d *draft) any { return &d.Escalation.GitHub.Login }},
	{Name: EscalationGitHubSecret, Default: "", ReadBy: GitHubBot, Required: GitHubBot,
		Doc:  "the webhook's secret: the GitHub bot refuses any delivery not signed with it (X-Hub-Signature-256)",
		into: func(d *draft) any { return &d.Escalation.GitHub.WebhookSecret }},
	{Name: EscalationGitHubListen, Default: "127.0.0.1:3001", ReadBy: GitHubBot,
		Flag: "github-listen", FlagIn: GitHubBot, FlagUsage: "listen address",
		Doc:  "address the GitHub bot takes webhook deliveries on (path `/github/webhook`); `0.0.0.0:3001` in a container",
		into: func(d *draft) any { return &d.Escalation.GitHub.Listen }},
	{Name: EscalationGitHubTeams, Kind: List, Default: []string{}, ReadBy: GitHubBot,
		Flag: "teams", FlagIn: GitHubBot, FlagUsage: "comma-separated org/team-slug whose members may use /keel commands",
		Doc:  "`org/team-slug` teams whose members may use the `/keel` commands besides collaborators with write access",
		Hint: "e.g. [acme/release-managers]",
		into: func(d *draft) any { return &d.Escalation.GitHub.Teams }},
	{Name: EscalationGitHubJobs, Kind: Path, Default: "", DefaultDoc: "empty: pull request events start nothing", ReadBy: GitHubBot,
		Doc:  "the rule file of the jobs the GitHub bot starts from pull request events ([github](github.md#the-rule-file)); their sessions start from the bot's own gateway, tools, limits and escalation keys",
		into: func(d *draft) any { return &d.Escalation.GitHub.Jobs }},
	{Name: EscalationWebhookURL, Default: "", ReadBy: Worker, Channel: contract.ChannelWebhook,
		Doc: "where the escalation record is POSTed as JSON", into: func(d *draft) any { return &d.Escalation.Webhook.URL }},
	{Name: EscalationWebhookSecret, Default: "", ReadBy: Worker, Channel: contract.ChannelWebhook,
		Doc: "key of the HMAC-SHA256 signature header", into: func(d *draft) any { return &d.Escalation.Webhook.Secret }},

	{Name: MCPServers, Kind: Object, Default: []any{}, Shape: "a list of {name, command: [...]} or {name, url}", ReadBy: Worker,
		Doc: "MCP servers whose tools sessions get: `{name, command: [...], env: [...], dir}` (stdio; `dir`, absolute, is its working directory, " +
			"else an empty folder of the worker's) or `{name, url}` (streamable HTTP)",
		Hint: "e.g. [{name: docs, command: [docs-mcp, --stdio]}, {name: search, url: http://127.0.0.1:8931/mcp}]",
		into: func(d *draft) any { return &d.MCP }},
	{Name: MetricsAddress, Default: "", ReadBy: Worker,
		Doc: "serve Prometheus metrics here, e.g. `127.0.0.1:9464`", Hint: "e.g. 127.0.0.1:9464 serves /metrics",
		into: func(d *draft) any { return &d.Metrics.Address }},
	{Name: EventsInterval, Kind: Duration, Default: contract.DefaultEventsInterval.String(), ReadBy: Worker,
		Doc: "how often a running model call or tool of a watched session heartbeats its new live events, which watchers read " +
			"through Temporal; unwatched sessions send none ([architecture](architecture.md#how-a-terminal-follows-a-session))",
		Hint: "how often a watched session's running call heartbeats its new live events",
		into: func(d *draft) any { return &d.Events.Interval }},
	{Name: Log, Default: "", ReadBy: Worker | Starter | SlackBot | GitHubBot,
		DefaultDoc: "empty: the worker and the Slack bot log Keel's lines from `info` and the Temporal SDK's from `warn`; the starter none of the SDK's",
		Doc: "how much the programs log to standard error: `debug`, `info`, `warn`, `error` or `off` (any other value: `debug`), " +
			"for Keel's lines and the Temporal SDK's alike; set, it makes the starter log the SDK's too ([operations](operations.md#logs))",
		Hint: "debug, info, warn, error or off; empty: Keel's lines from info, the SDK's from warn",
		into: func(d *draft) any { return &d.LogLevel }},
}

// groupHints are the example file's comments on a parent of several keys.
var groupHints = map[string]string{
	"tools.limits":  "per command, in its sandbox",
	"tools.breaker": "per MCP server: opens after `failures` within `window`",
}

// GroupHint is the example file's comment on a parent of several keys, "" for none.
func GroupHint(parent string) string { return groupHints[parent] }

// byName indexes the table.
var byName = func() map[string]*Setting {
	m := make(map[string]*Setting, len(settings))
	for i := range settings {
		m[settings[i].Name] = &settings[i]
	}
	return m
}()

// Settings returns the table of keys, in its order, for the generator of the docs and the example.
func Settings() []Setting { return slices.Clone(settings) }

// Lookup returns the row of a key.
func Lookup(key string) (Setting, bool) {
	s, ok := byName[key]
	if !ok {
		return Setting{}, false
	}
	return *s, true
}

// Keys lists every configuration key, sorted.
func Keys() []string {
	keys := make([]string, 0, len(settings))
	for _, s := range settings {
		keys = append(keys, s.Name)
	}
	slices.Sort(keys)
	return keys
}

// known says whether a key read from the file is in the table: a key itself, or an entry below
// a map-valued one (tools.fallbacks.NAME, gateway.keys.NAME.env).
// removedKeys are keys Keel no longer reads, with what to do instead: a file or a KEEL_ variable
// that still sets one is refused with that message rather than silently ignored.
var removedKeys = map[string]string{
	"events.host": "watchers read live events through their Temporal client and nothing listens for them; remove it",
}

// removed is the message for a key Keel no longer reads, "" for any other.
func removed(key string) string { return removedKeys[key] }

func known(key string) bool {
	if _, ok := byName[key]; ok {
		return true
	}
	for _, s := range settings {
		if s.isMap() && strings.HasPrefix(key, s.Name+".") {
			return true
		}
	}
	return false
}

// isMap says whether the key's value is a map, whose entries the file names freely.
func (s Setting) isMap() bool {
	switch s.Default.(type) {
	case map[string]any, map[string]string:
		return true
	}
	return false
}

// DefaultValue is the default as a person would write it: "" for none, 5m for five minutes, []
// for an empty list, {} for an empty map.
func (s Setting) DefaultValue() string {
	switch d := s.Default.(type) {
	case string:
		return d
	case time.Duration:
		return formatDuration(d)
	case []string, []any:
		return "[]"
	case map[string]any, map[string]string:
		return "{}"
	}
	return fmt.Sprint(s.Default)
}

// formatDuration writes d as a person would (5m, 1h30m, 200ms) rather than as Go does (5m0s).
func formatDuration(d time.Duration) string {
	t := d.String()
	if strings.HasSuffix(t, "m0s") {
		t = strings.TrimSuffix(t, "0s")
	}
	if strings.HasSuffix(t, "h0m") {
		t = strings.TrimSuffix(t, "0m")
	}
	return t
}

// EnvName is the environment variable that sets a key: KEEL_ and the key in upper case with
// underscores for dots (gateway.api_key is KEEL_GATEWAY_API_KEY).
func EnvName(key string) string {
	return "KEEL_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// EnvNames are every environment variable that sets s, the one that wins first.
func (s Setting) EnvNames() []string {
	return append([]string{EnvName(s.Name)}, s.Env...)
}

// AddFlags registers the command-line flags of keys on fs, with their help taken from the table;
// Load applies the ones a command line sets. A key without a flag is a mistake in the caller.
func AddFlags(fs *pflag.FlagSet, keys ...string) {
	for _, key := range keys {
		s, ok := byName[key]
		if !ok || s.Flag == "" {
			panic(fmt.Sprintf("config: %s has no command-line flag in the key table", key))
		}
		fs.String(s.Flag, "", s.flagHelp())
	}
}

// flagHelp is a flag's help: what it sets, the key and variable that set the same, and the default.
func (s Setting) flagHelp() string {
	h := s.FlagUsage + " (" + s.Name + ", env " + strings.Join(s.EnvNames(), " or ")
	if d := s.DefaultValue(); d != "" && d != "[]" && d != "{}" {
		h += ", default " + d
	}
	return h + ")"
}
