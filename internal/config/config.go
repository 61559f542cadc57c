// Package config loads Keel's configuration from a keel.yaml, KEEL_* environment variables (plus the
// usual TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE) and command-line flags, in rising precedence. Every
// value is checked at load time: a bad one stops the program before anything starts, with one line
// naming the key. It also decides which of Keel's own files and folders no work directory may
// contain (CheckWorkdir).
package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/keelrun/keel/internal/contract"
)

// Config is the whole configuration. The table in keys.go lists every key, and
// docs/configuration.md's key table is made from it.
type Config struct {
	Temporal  Temporal
	Dev       Dev
	Snapshots Snapshots
	// Workspaces says where and how a worker materializes sessions' workspaces from git.
	Workspaces Workspaces
	Gateway    Gateway
	Limits     contract.Limits
	Tools      contract.ToolPolicy
	// WorkerTools are the worker's own tool settings, handed to the tools as they are.
	WorkerTools contract.WorkerTools
	// Sandbox confines run_command (tools.sandbox, tools.network, tools.limits.*); nil when
	// tools.sandbox is off.
	Sandbox    *Sandbox
	Store      Store
	Escalation Escalation
	Metrics    Metrics
	Events     Events
	Codec      Codec
	// LogLevel is the key log: debug, info, warn, error or off; empty for each program's
	// default (internal/logs reads it).
	LogLevel string
	// MCP lists the MCP servers whose tools the sessions get.
	MCP []MCPServer
	// File is the configuration file that was read, as an absolute path; "" when none was.
	File string
}

// Temporal says where the Temporal server is.
type Temporal struct {
	Address   string
	Namespace string
	TaskQueue string
	// UIURL is the Web UI's base URL, for links.
	UIURL string
	// TurnsPerRun continues sessions as new after that many turns per run (0: when suggested).
	TurnsPerRun int
	// FallbackHeartbeat is how often running model calls and tools heartbeat when the server
	// cannot push cancellation to the worker (no worker commands): a cancel then arrives only in
	// a heartbeat reply, so this bounds how long a cancelled command runs on.
	FallbackHeartbeat time.Duration
	// HeartbeatTimeout is the sessions' SessionInput.HeartbeatTimeout (0: the workflows' default).
	HeartbeatTimeout time.Duration
	// Deployment and BuildID are the worker's Worker Versioning identity; an empty Deployment
	// leaves the worker unversioned.
	Deployment string
	BuildID    string
	// Profile names the temporal.toml profile read under these keys (TEMPORAL_PROFILE);
	// APIKey, TLS and the address and namespace above override what the profile says.
	Profile string
	// APIKey is sent as the Authorization bearer on every call (Temporal Cloud's API keys).
	APIKey string
	TLS    TLS
	// ConnectTimeout bounds connecting and the first health check, so a wrong setting fails
	// with one line instead of a hang.
	ConnectTimeout time.Duration
}

// TLS configures the client's TLS to Temporal; paths are absolute. The zero value means plain
// TCP unless the profile or an API key asks for TLS.
type TLS struct {
	// Enabled asks for TLS with the system's roots even when no CA or certificate is set.
	Enabled    bool
	CA         string
	Cert       string
	Key        string
	ServerName string
}

// Codec configures payload encryption and the codec server.
type Codec struct {
	// Keys are ID=env:VARIABLE or ID=file:PATH, the encrypting key first; none: no encryption.
	Keys []string
	// Listen is the codec server's address.
	Listen string
	// Token is what the codec server requires as the Authorization bearer; empty: none.
	Token string
	// Origins are the browser origins the codec server answers (CORS); empty: the Web UI's.
	Origins []string
}

// Dev configures the local dev stack the starter can bring up.
type Dev struct {
	// StateDir holds the dev server's SQLite file and the local transcript store, as an absolute
	// path; DefaultStateDir when dev.state_dir is not set.
	StateDir string
	UIPort   int
	// MetricsPort serves the started dev server's Prometheus metrics (its `action` counter among
	// them) on 127.0.0.1:MetricsPort/metrics; 0 leaves them off.
	MetricsPort int
}

// Snapshots bounds the snapshots of work directories kept in the state directory for fork --turn,
// which grow with every turn that changes files until something bounds them.
type Snapshots struct {
	// SessionMax and TotalMax (bytes) bound what one session's snapshots add and what all of
	// them take; 0 is no bound.
	SessionMax, TotalMax int64
	// KeepBytes and KeepFor are starter prune's retention: the size it brings the snapshots to,
	// and the age past which a session's go; 0 keeps any.
	KeepBytes int64
	KeepFor   time.Duration
}

// Workspaces configures the workspaces a worker materializes from git (internal/workspace).
type Workspaces struct {
	// Root holds the caches and the workspaces; <state_dir>/workspaces when not set.
	Root string
	// GitHubURL is the GitHub repositories written owner/name belong to, checked and normalized
	// by contract.GitHubURL.
	GitHubURL string
	// GitToken fetches repositories from GitTokenHost; an empty GitTokenHost is GitHubURL's host.
	GitToken     string
	GitTokenHost string
	// Push sends an ended session's changes to its origin as the branch keel/<session>.
	Push bool
	// KeepFor is starter prune's age past which an unused workspace goes; CacheBytes bounds the
	// caches together. 0 keeps any.
	KeepFor    time.Duration
	CacheBytes int64
	// RecordBytes bounds the files of one workspace state recorded in the store.
	RecordBytes int64
}

// Gateway configures the model provider.
type Gateway struct {
	Provider string
	BaseURL  string
	APIKey   string
	Model    string
	// Fake runs the built-in scripted gateway in-process and points the client at it.
	Fake bool
	// Price is what tokens cost, for the cost the starter shows at a session's end.
	Price Prices
	Retry contract.RetryConfig
	// FixedJitter, when set, replaces the backoff's random draw with this fraction in [0, 1] in
	// the workers of this process, so a test or a person can reproduce an exact schedule of waits
	// (0.5 gives 300, 600, 1,200 ms from the default base). Nil draws at random, as production
	// must, so that sessions throttled together do not retry in lockstep. It stays in the worker:
	// no workflow input or activity request carries it.
	FixedJitter *float64
	// Fallbacks are tried in order, within the same model call, when the primary is down.
	Fallbacks []Fallback
	// Keys are the API keys sessions may name for their own endpoints (starter run --api-key-ref),
	// by name. Each is sent only to its BaseURL; APIKey itself is the key named "default", sent
	// only to BaseURL above.
	Keys map[string]Key
}

// Prices are what a million tokens cost; zero shows no cost.
type Prices struct {
	Input, Output float64
}

// Cost is what input and output tokens cost at p, and whether p prices anything.
func (p Prices) Cost(input, output int64) (float64, bool) {
	if p.Input == 0 && p.Output == 0 {
		return 0, false
	}
	return (float64(input)*p.Input + float64(output)*p.Output) / 1e6, true
}

// Key is one entry of gateway.keys. As with gateway.fallbacks, the key itself never sits in the
// file: Env names the environment variable that holds it.
type Key struct {
	Env     string `mapstructure:"env"`
	BaseURL string `mapstructure:"base_url"`
	// Value is read from Env when the configuration is loaded.
	Value string `mapstructure:"-"`
}

// Fallback is one model of gateway.fallbacks. The key itself never sits in the file: APIKeyEnv
// names the environment variable that holds it.
type Fallback struct {
	Provider  string `mapstructure:"provider"`
	BaseURL   string `mapstructure:"base_url"`
	Model     string `mapstructure:"model"`
	APIKeyEnv string `mapstructure:"api_key_env"`
	// APIKey is read from APIKeyEnv when the configuration is loaded.
	APIKey string `mapstructure:"-"`
}

// Sandbox is how every run_command of a worker is confined; the worker hands it to the sandbox
// package, which this package does not link (its init would make every program that reads the
// configuration a sandbox init). Zero limits take the sandbox's defaults.
type Sandbox struct {
	// Network is sandboxdefaults.NetworkNone or NetworkHost (package internal/tools/sandbox/defaults).
	Network string
	// CacheDir is mounted read-write at /cache in every command, as an absolute path.
	CacheDir string
	// Processes, Memory (bytes), CPUTime and FileSize (bytes) bound one command.
	Processes int
	Memory    int64
	CPUTime   time.Duration
	FileSize  int64
}

// MCPServer is one entry of mcp.servers: a server started as a command (stdio) or reached at a
// URL (streamable HTTP). Its fields are those of the MCP package's ServerConfig, so the worker
// converts one into the other.
type MCPServer struct {
	Name    string   `json:"name" mapstructure:"name"`
	Command []string `json:"command,omitempty" mapstructure:"command"`
	URL     string   `json:"url,omitempty" mapstructure:"url"`
	Env     []string `json:"env,omitempty" mapstructure:"env"`
	Dir     string   `json:"dir,omitempty" mapstructure:"dir"`
}

// Store configures the transcript store.
type Store struct {
	Backend string
	Path    string
	DSN     string
}

// Escalation configures escalations and their channels.
type Escalation struct {
	contract.EscalationPolicy
	Slack   Slack
	GitHub  GitHub
	Webhook Webhook
}

// Slack configures the Slack channel and bot.
type Slack struct {
	BotToken      string
	SigningSecret string
	Channel       string
	TeamID        string
	Approvers     []string
	Listen        string
	APIURL        string
}

// GitHub configures the pull-request comment channel.
type GitHub struct {
	Token   string
	BaseURL string
	Repo    string
	PR      int
	// Login is who the token comments as; empty: asked of GitHub (GET /user).
	Login string
	// WebhookSecret, Listen and Teams configure the GitHub bot.
	WebhookSecret string
	Listen        string
	Teams         []string
	// Jobs is the rule file of the jobs pull request events start.
	Jobs string
}

// Webhook configures the signed webhook channel.
type Webhook struct {
	URL    string
	Secret string
}

// Metrics configures the Prometheus endpoint.
type Metrics struct {
	Address string
}

// Events configures live events.
type Events struct {
	// Interval is how often a watched session's running activity heartbeats its new events.
	Interval time.Duration
}

// Error is a configuration error: the starter prints it as one line and exits 2.
type Error struct {
	Key string
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("config: %s: %s", e.Key, e.Msg) }

// IsError reports whether err is a configuration error.
func IsError(err error) bool {
	var ce *Error
	return errors.As(err, &ce)
}

// Load reads the configuration of a program that runs sessions' model calls and tools (the
// worker, and the starter commands that run one in-process): LoadFor(Worker|Starter, ...).
func Load(path string, fs *pflag.FlagSet, overrides map[string]any) (Config, error) {
	return LoadFor(Worker|Starter, path, fs, overrides)
}

// LoadFor reads the configuration for the programs prog: the file (see configFile), the
// environment, then any flag of the table that fs holds and the command line set, then overrides
// (what a command itself fixes, such as the demo's fake gateway). Every key is checked in every
// program; what a key's row says prog requires is required only there.
func LoadFor(prog Program, path string, fs *pflag.FlagSet, overrides map[string]any) (Config, error) {
	v := newViper()
	file, err := readFile(v, path)
	if err != nil {
		return Config{}, err
	}
	for k, msg := range removedKeys {
		if env := "KEEL_" + strings.ToUpper(strings.ReplaceAll(k, ".", "_")); os.Getenv(env) != "" {
			return Config{}, &Error{Key: k, Msg: fmt.Sprintf("set by %s: %s", env, msg)}
		}
	}
	applyFlags(v, fs)
	for k, val := range overrides {
		v.Set(k, val)
	}
	return decode(v, file, prog)
}

// newViper is a viper that knows every key of the table with its default and its environment
// variables: KEEL_<KEY> for each (registering every key is what lets a variable reach one no file
// mentions), and a row's own names after it.
func newViper() *viper.Viper {
	v := viper.New()
	for _, s := range settings {
		v.SetDefault(s.Name, s.Default)
	}
	v.SetEnvPrefix("KEEL")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	for _, s := range settings {
		if len(s.Env) > 0 {
			_ = v.BindEnv(append([]string{s.Name}, s.EnvNames()...)...)
		}
	}
	return v
}

// applyFlags sets the keys whose flags fs holds and the command line set; nil holds none.
func applyFlags(v *viper.Viper, fs *pflag.FlagSet) {
	if fs == nil {
		return
	}
	for _, s := range settings {
		if f := fs.Lookup(s.Flag); s.Flag != "" && f != nil && f.Changed {
			v.Set(s.Name, f.Value.String())
		}
	}
}

// configFile is the file to read: path (--config), else $KEEL_CONFIG, both even when missing so
// that a typo is an error; else the user's own file (UserConfigFile), else keel.yaml in the working
// directory, each only when it exists; else "" for none. The user's file comes before the working
// directory's so that a team can keep its settings out of the work directory, where the model
// could rewrite them (the starter and the worker refuse a work directory that holds the file in use).
func configFile(path string) string {
	if path == "" {
		path = os.Getenv("KEEL_CONFIG")
	}
	if path != "" {
		return path
	}
	for _, p := range []string{UserConfigFile(), FileName} {
		if st, err := os.Stat(p); p != "" && err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// readFile reads the configuration file into v and returns its absolute path, "" when there is none.
func readFile(v *viper.Viper, path string) (string, error) {
	path = configFile(path)
	if path == "" {
		return "", nil
	}
	v.SetConfigFile(path)
	if err := v.ReadInConfig(); err != nil {
		return "", &Error{Key: "file", Msg: fmt.Sprintf("reading %s: %v", path, err)}
	}
	for _, k := range v.AllKeys() {
		if msg := removed(k); msg != "" {
			return "", &Error{Key: k, Msg: fmt.Sprintf("set in %s: %s", path, msg)}
		}
		if !known(k) {
			return "", &Error{Key: k, Msg: fmt.Sprintf("unknown key in %s%s", path, didYouMean(k))}
		}
	}
	return absPath(path), nil
}

// Duration parses a duration-valued key.
func duration(v *viper.Viper, key string) (time.Duration, error) {
	raw := strings.TrimSpace(v.GetString(key))
	if raw == "" || raw == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d < 0 {
		return 0, &Error{Key: key, Msg: fmt.Sprintf("%q is not a duration (use a value like 90s, 5m or 1h)", raw)}
	}
	return d, nil
}
