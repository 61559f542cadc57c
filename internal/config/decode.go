package config

import (
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/gateway"
	"github.com/keelrun/keel/internal/tools/breaker"
	"github.com/keelrun/keel/internal/tools/sandbox"
)

// decoder collects typed values from viper and stops at the first bad one.
type decoder struct {
	v   *viper.Viper
	err error
}

func (d *decoder) dur(key string) time.Duration {
	if d.err != nil {
		return 0
	}
	got, err := duration(d.v, key)
	d.err = err
	return got
}

func (d *decoder) integer(key string) int64 {
	if d.err != nil {
		return 0
	}
	raw := strings.TrimSpace(d.v.GetString(key))
	if raw == "" {
		return 0
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 0 {
		d.err = &Error{Key: key, Msg: fmt.Sprintf("%q is not a whole number of zero or more", raw)}
	}
	return n
}

// fraction reads an optional number in [0, 1]; nil when the key is empty.
func (d *decoder) fraction(key string) *float64 {
	raw := strings.TrimSpace(d.v.GetString(key))
	if d.err != nil || raw == "" {
		return nil
	}
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil || !(f >= 0 && f <= 1) {
		d.err = &Error{Key: key, Msg: fmt.Sprintf("%q is not a number from 0 to 1", raw)}
		return nil
	}
	return &f
}

func (d *decoder) oneOf(key string, allowed ...string) string {
	val := strings.ToLower(strings.TrimSpace(d.v.GetString(key)))
	if d.err == nil && !slices.Contains(allowed, val) {
		d.err = &Error{Key: key, Msg: fmt.Sprintf("%q is not one of %s", val, strings.Join(allowed, ", "))}
	}
	return val
}

// stateDir reads dev.state_dir as an absolute path, DefaultStateDir when it is not set.
func (d *decoder) stateDir() string {
	const key = "dev.state_dir"
	if dir := strings.TrimSpace(d.v.GetString(key)); dir != "" {
		return absPath(dir)
	}
	dir, err := DefaultStateDir()
	if err != nil && d.err == nil {
		d.err = &Error{Key: key, Msg: "no default: " + err.Error() + "; set dev.state_dir (--state-dir, KEEL_DEV_STATE_DIR) to a folder outside every work directory"}
	}
	return dir
}

func (d *decoder) list(key string) []string {
	var out []string
	for _, s := range d.v.GetStringSlice(key) {
		for _, part := range strings.Split(s, ",") {
			if p := strings.TrimSpace(part); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// fallbacks reads gateway.fallbacks: each needs a known provider and a model, and, unless the fake
// gateway serves them, a base URL and an api_key_env naming a variable that is set.
func (d *decoder) fallbacks(fake bool) []Fallback {
	const key = "gateway.fallbacks"
	var fbs []Fallback
	if err := d.v.UnmarshalKey(key, &fbs); err != nil {
		if d.err == nil {
			d.err = &Error{Key: key, Msg: "want a list of {provider, base_url, model, api_key_env}: " + err.Error()}
		}
		return nil
	}
	for i := range fbs {
		f := &fbs[i]
		f.Provider = strings.ToLower(strings.TrimSpace(f.Provider))
		f.APIKey = os.Getenv(f.APIKeyEnv)
		var msg string
		switch {
		case !slices.Contains(contract.Providers, f.Provider):
			msg = fmt.Sprintf("provider %q is not one of %s", f.Provider, strings.Join(contract.Providers, ", "))
		case strings.TrimSpace(f.Model) == "":
			msg = "model is empty"
		case fake:
		case f.BaseURL == "":
			msg = "base_url is empty"
		case f.APIKeyEnv == "":
			msg = "api_key_env is empty: name the environment variable that holds the key"
		case f.APIKey == "":
			msg = fmt.Sprintf("the environment variable %s (api_key_env) is not set", f.APIKeyEnv)
		}
		if msg != "" && d.err == nil {
			d.err = &Error{Key: fmt.Sprintf("%s[%d]", key, i), Msg: msg}
		}
	}
	return fbs
}

// keys reads gateway.keys: each names the environment variable that holds it (set, unless the fake
// gateway serves) and the one base URL it may be sent to. "default" is the worker's own
// gateway.api_key and cannot be declared again.
func (d *decoder) keys(fake bool) map[string]Key {
	const key = "gateway.keys"
	var keys map[string]Key
	if err := d.v.UnmarshalKey(key, &keys); err != nil {
		if d.err == nil {
			d.err = &Error{Key: key, Msg: "want a map of NAME: {env: VARIABLE, base_url: URL}: " + err.Error()}
		}
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(keys)) {
		k := keys[name]
		k.Value = os.Getenv(k.Env)
		var msg string
		switch {
		case name == contract.DefaultKey:
			msg = "the name default is the worker's own gateway.api_key; choose another name"
		case contract.CheckKeyName(name) != nil:
			msg = contract.CheckKeyName(name).Error()
		case k.Env == "":
			msg = "env is empty: name the environment variable that holds the key"
		case k.BaseURL == "":
			msg = "base_url is empty: a key is sent only to the base URL it is declared for"
		case k.Value == "" && !fake:
			msg = fmt.Sprintf("the environment variable %s (env) is not set", k.Env)
		}
		if msg == "" {
			if _, err := gateway.NormalizeBaseURL(k.BaseURL); err != nil {
				msg = err.Error()
			}
		}
		if msg != "" && d.err == nil {
			d.err = &Error{Key: key + "." + name, Msg: msg}
		}
		keys[name] = k
	}
	return keys
}

func decode(v *viper.Viper, file string) (Config, error) {
	d := &decoder{v: v}
	c := Config{File: file}
	c.Temporal = Temporal{
		Address:   v.GetString("temporal.address"),
		Namespace: v.GetString("temporal.namespace"),
		TaskQueue: v.GetString("temporal.task_queue"),
		UIURL:     strings.TrimRight(v.GetString("temporal.ui_url"), "/"),
	}
	c.Temporal.TurnsPerRun = int(d.integer("temporal.turns_per_run"))
	c.Temporal.FallbackHeartbeat = d.dur("temporal.fallback_heartbeat")
	c.Dev = Dev{StateDir: d.stateDir(), UIPort: int(d.integer("dev.ui_port")), MetricsPort: int(d.integer("dev.metrics_port"))}
	if c.Temporal.UIURL == "" {
		c.Temporal.UIURL = defaultUIURL(c.Temporal.Address, c.Dev.UIPort)
	}
	c.Gateway = Gateway{
		Provider: d.oneOf("gateway.provider", contract.Providers...),
		BaseURL:  v.GetString("gateway.base_url"),
		APIKey:   v.GetString("gateway.api_key"),
		Model:    v.GetString("gateway.model"),
		Fake:     v.GetBool("gateway.fake"),
		Retry:    contract.RetryConfig{Base: d.dur("gateway.retry.base"), Cap: d.dur("gateway.retry.cap")},
	}
	c.Gateway.FixedJitter = d.fraction("gateway.retry.fixed_jitter")
	c.Gateway.Fallbacks = d.fallbacks(c.Gateway.Fake)
	c.Gateway.Keys = d.keys(c.Gateway.Fake)
	c.Limits = contract.Limits{
		MaxTurns:    int(d.integer("limits.max_turns")),
		MaxDuration: d.dur("limits.max_duration"),
		MaxTokens:   d.integer("limits.max_tokens"),

		ContextTokens: d.integer("limits.context_tokens"),
	}
	c.Tools = contract.ToolPolicy{
		Approval:        d.oneOf("tools.approval", "never", "writes", "always"),
		Allow:           d.list("tools.allow"),
		Deny:            d.list("tools.deny"),
		Commands:        d.list("tools.commands"),
		CommandTimeout:  d.dur("tools.command_timeout"),
		ApprovalTimeout: d.dur("tools.approval_timeout"),
	}
	c.Tools.Breaker = breaker.Config{
		Failures: int(d.integer("tools.breaker.failures")),
		Window:   d.dur("tools.breaker.window"),
		Cooldown: d.dur("tools.breaker.cooldown"),
	}
	c.Tools.Fallbacks = v.GetStringMapString("tools.fallbacks")
	c.OutputCap = int(d.integer("tools.output_cap"))
	c.Sandbox = decodeSandbox(d)
	if err := v.UnmarshalKey("mcp.servers", &c.MCP); err != nil && d.err == nil {
		d.err = &Error{Key: "mcp.servers", Msg: "want a list of {name, command: [...]} or {name, url}: " + err.Error()}
	}
	for _, s := range c.MCP {
		if d.err == nil && (s.Name == "" || (len(s.Command) == 0) == (s.URL == "")) {
			d.err = &Error{Key: "mcp.servers", Msg: fmt.Sprintf("server %q needs a name and exactly one of command or url", s.Name)}
		}
	}
	c.Store = Store{Backend: d.oneOf("store.backend", "file", "postgres"), Path: absPath(v.GetString("store.path")), DSN: v.GetString("store.dsn")}
	if c.Store.Path == "" && c.Dev.StateDir != "" {
		c.Store.Path = filepath.Join(c.Dev.StateDir, "store")
	}
	c.Escalation = Escalation{
		EscalationPolicy: contract.EscalationPolicy{
			Deadline:      d.dur("escalation.deadline"),
			DefaultAction: d.oneOf("escalation.default_action", contract.ActionAbort, contract.ActionRetry),
			Channels:      d.list("escalation.channels"),
			UIBase:        c.Temporal.UIURL,
		},
		Slack: Slack{
			BotToken: v.GetString("escalation.slack.bot_token"), SigningSecret: v.GetString("escalation.slack.signing_secret"),
			Channel: v.GetString("escalation.slack.channel"), TeamID: v.GetString("escalation.slack.team_id"),
			Approvers: d.list("escalation.slack.approvers"), Listen: v.GetString("escalation.slack.listen"),
			APIURL: v.GetString("escalation.slack.api_url"),
		},
		GitHub: GitHub{
			Token: v.GetString("escalation.github.token"), BaseURL: v.GetString("escalation.github.base_url"),
			Repo: v.GetString("escalation.github.repo"), PR: int(d.integer("escalation.github.pr")),
		},
		Webhook: Webhook{URL: v.GetString("escalation.webhook.url"), Secret: v.GetString("escalation.webhook.secret")},
	}
	c.Metrics = Metrics{Address: v.GetString("metrics.address")}
	c.Events = Events{Host: v.GetString("events.host")}
	if d.err != nil {
		return Config{}, d.err
	}
	return c, c.check()
}

// check validates relations between keys.
func (c Config) check() error {
	if !c.Gateway.Fake && c.Gateway.APIKey == "" {
		return &Error{Key: "gateway.api_key", Msg: fmt.Sprintf("required for provider %s (set KEEL_GATEWAY_API_KEY, or use the fake gateway)", c.Gateway.Provider)}
	}
	if c.Store.Backend == "postgres" && c.Store.DSN == "" {
		return &Error{Key: "store.dsn", Msg: "required when store.backend is postgres"}
	}
	if c.Temporal.Address == "" {
		return &Error{Key: "temporal.address", Msg: "must not be empty"}
	}
	for _, ch := range c.Escalation.Channels {
		if err := c.checkChannel(ch); err != nil {
			return err
		}
	}
	return c.checkCache()
}

func (c Config) checkChannel(ch string) error {
	need := func(key, val string) error {
		if val == "" {
			return &Error{Key: key, Msg: fmt.Sprintf("required when escalation.channels lists %s", ch)}
		}
		return nil
	}
	switch ch {
	case contract.ChannelSlack:
		if err := need("escalation.slack.bot_token", c.Escalation.Slack.BotToken); err != nil {
			return err
		}
		return need("escalation.slack.channel", c.Escalation.Slack.Channel)
	case contract.ChannelGitHub:
		if err := need("escalation.github.token", c.Escalation.GitHub.Token); err != nil {
			return err
		}
		return need("escalation.github.repo", c.Escalation.GitHub.Repo)
	case contract.ChannelWebhook:
		if err := need("escalation.webhook.url", c.Escalation.Webhook.URL); err != nil {
			return err
		}
		return need("escalation.webhook.secret", c.Escalation.Webhook.Secret)
	default:
		return &Error{Key: "escalation.channels", Msg: fmt.Sprintf("unknown channel %q (use slack, github or webhook)", ch)}
	}
}

// defaultUIURL is the Web UI a dev server serves next to its frontend: the frontend's host and
// dev.ui_port, so links follow the port the starter starts the UI on.
func defaultUIURL(address string, port int) string {
	host, _, err := net.SplitHostPort(address)
	if err != nil || host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(port))
}

// decodeSandbox reads the sandbox's keys; nil when tools.sandbox is off.
func decodeSandbox(d *decoder) *sandbox.Config {
	on := d.oneOf("tools.sandbox", "on", "off", "true", "false")
	cfg := &sandbox.Config{
		Network:  d.oneOf("tools.network", sandbox.NetworkNone, sandbox.NetworkHost),
		CacheDir: absPath(d.v.GetString("tools.sandbox_cache")),
		Limits: sandbox.Limits{
			Processes: int(d.integer("tools.limits.processes")),
			Memory:    d.integer("tools.limits.memory_mb") << 20,
			CPUTime:   d.dur("tools.limits.cpu_time"),
			FileSize:  d.integer("tools.limits.file_size_mb") << 20,
		},
	}
	if on == "off" || on == "false" {
		return nil
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = defaultCacheDir()
	}
	return cfg
}
