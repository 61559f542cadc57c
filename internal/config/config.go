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
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/mcp"
	"github.com/keelrun/keel/internal/tools/sandbox"
)

// Config is the whole configuration. docs/configuration.md documents every key.
type Config struct {
	Temporal  Temporal
	Dev       Dev
	Gateway   Gateway
	Limits    contract.Limits
	Tools     contract.ToolPolicy
	OutputCap int
	// Sandbox confines run_command (tools.sandbox, tools.network, tools.limits.*); nil when
	// tools.sandbox is off.
	Sandbox    *sandbox.Config
	Store      Store
	Escalation Escalation
	Metrics    Metrics
	Events     Events
	// MCP lists the MCP servers whose tools the sessions get.
	MCP []mcp.ServerConfig
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

// Gateway configures the model provider.
type Gateway struct {
	Provider string
	BaseURL  string
	APIKey   string
	Model    string
	// Fake runs the built-in scripted gateway in-process and points the client at it.
	Fake  bool
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

// Events configures where live events are received.
type Events struct {
	Host string
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

// defaults are every key with its default; registering each one is also what lets a KEEL_* variable
// reach a key that no file mentions.
var defaults = map[string]any{
	"temporal.address":                "127.0.0.1:7233",
	"temporal.namespace":              "default",
	"temporal.task_queue":             contract.TaskQueue,
	"temporal.ui_url":                 "",
	"temporal.turns_per_run":          0,
	"temporal.fallback_heartbeat":     "200ms",
	"dev.state_dir":                   "",
	"dev.ui_port":                     8233,
	"dev.metrics_port":                0,
	"gateway.provider":                contract.ProviderOpenAI,
	"gateway.base_url":                "",
	"gateway.api_key":                 "",
	"gateway.model":                   "gpt-4o-mini",
	"gateway.fake":                    false,
	"gateway.retry.base":              "400ms",
	"gateway.retry.cap":               "8s",
	"gateway.retry.fixed_jitter":      "",
	"limits.max_turns":                40,
	"limits.max_duration":             "30m",
	"limits.max_tokens":               500000,
	"limits.context_tokens":           0,
	"tools.approval":                  "never",
	"tools.allow":                     []string{},
	"tools.deny":                      []string{},
	"tools.commands":                  []string{},
	"tools.command_timeout":           "60s",
	"tools.approval_timeout":          "10m",
	"tools.output_cap":                16384,
	"tools.sandbox":                   "on",
	"tools.network":                   sandbox.NetworkNone,
	"tools.sandbox_cache":             "",
	"tools.limits.processes":          sandbox.DefaultProcesses,
	"tools.limits.memory_mb":          sandbox.DefaultMemory >> 20,
	"tools.limits.cpu_time":           sandbox.DefaultCPUTime.String(),
	"tools.limits.file_size_mb":       sandbox.DefaultFileSize >> 20,
	"tools.breaker.failures":          5,
	"tools.breaker.window":            "2m",
	"tools.breaker.cooldown":          "60s",
	"tools.fallbacks":                 map[string]string{},
	"mcp.servers":                     []any{},
	"gateway.fallbacks":               []any{},
	"gateway.keys":                    map[string]any{},
	"store.backend":                   "file",
	"store.path":                      "",
	"store.dsn":                       "",
	"escalation.deadline":             "30m",
	"escalation.default_action":       contract.ActionAbort,
	"escalation.channels":             []string{},
	"escalation.slack.bot_token":      "",
	"escalation.slack.signing_secret": "",
	"escalation.slack.channel":        "",
	"escalation.slack.team_id":        "",
	"escalation.slack.approvers":      []string{},
	"escalation.slack.listen":         "127.0.0.1:3000",
	"escalation.slack.api_url":        "",
	"escalation.github.token":         "",
	"escalation.github.base_url":      "https://api.github.com",
	"escalation.github.repo":          "",
	"escalation.github.pr":            0,
	"escalation.webhook.url":          "",
	"escalation.webhook.secret":       "",
	"metrics.address":                 "",
	"events.host":                     "127.0.0.1",
}

// Keys lists every configuration key, sorted.
func Keys() []string {
	keys := make([]string, 0, len(defaults))
	for k := range defaults {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// FlagKeys maps command-line flag names to configuration keys.
var FlagKeys = map[string]string{
	"temporal-address": "temporal.address",
	"namespace":        "temporal.namespace",
	"provider":         "gateway.provider",
	"model":            "gateway.model",
	"base-url":         "gateway.base_url",
	"max-turns":        "limits.max_turns",
	"max-duration":     "limits.max_duration",
	"max-tokens":       "limits.max_tokens",
	"context-tokens":   "limits.context_tokens",
	"state-dir":        "dev.state_dir",
}

// Load reads the configuration: the file (see configFile), the environment, then any flags in fs
// that were set, then overrides (what a command itself fixes, such as the demo's fake gateway).
func Load(path string, fs *pflag.FlagSet, overrides map[string]any) (Config, error) {
	v := viper.New()
	for k, d := range defaults {
		v.SetDefault(k, d)
	}
	v.SetEnvPrefix("KEEL")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	_ = v.BindEnv("temporal.address", "KEEL_TEMPORAL_ADDRESS", "TEMPORAL_ADDRESS")
	_ = v.BindEnv("temporal.namespace", "KEEL_TEMPORAL_NAMESPACE", "TEMPORAL_NAMESPACE")

	file, err := readFile(v, path)
	if err != nil {
		return Config{}, err
	}
	if fs != nil {
		for name, key := range FlagKeys {
			if f := fs.Lookup(name); f != nil && f.Changed {
				v.Set(key, f.Value.String())
			}
		}
	}
	for k, val := range overrides {
		v.Set(k, val)
	}
	return decode(v, file)
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
		if _, ok := defaults[k]; !ok && !strings.HasPrefix(k, "tools.fallbacks.") && !strings.HasPrefix(k, "gateway.keys.") {
			return "", &Error{Key: k, Msg: fmt.Sprintf("unknown key in %s", path)}
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
