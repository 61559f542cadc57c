package config

import (
	"fmt"
	"maps"
	"math"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/keelrun/keel/internal/contract"
)

// draft is the configuration while it is decoded: the Config, plus the values that decide whether
// a field is set rather than fill one (tools.sandbox decides whether Config.Sandbox is nil).
type draft struct {
	Config
	sandbox     Sandbox
	sandboxMode string
}

// decoder collects typed values from viper and stops at the first bad one.
type decoder struct {
	v   *viper.Viper
	err error
}

// fail records the first configuration error; later ones would only repeat its cause.
func (d *decoder) fail(key, msg string) {
	if d.err == nil {
		d.err = &Error{Key: key, Msg: msg}
	}
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
		d.fail(key, fmt.Sprintf("%q is not a whole number of zero or more", raw))
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
		d.fail(key, fmt.Sprintf("%q is not a number from 0 to 1", raw))
		return nil
	}
	return &f
}

// price reads an amount of money of zero or more; 0 when the key is empty.
func (d *decoder) price(key string) float64 {
	raw := strings.TrimSpace(d.v.GetString(key))
	if d.err != nil || raw == "" {
		return 0
	}
	f, err := strconv.ParseFloat(raw, 64)
	if err != nil || !(f >= 0) || math.IsInf(f, 1) {
		d.fail(key, fmt.Sprintf("%q is not an amount of zero or more (a number such as 2.5)", raw))
		return 0
	}
	return f
}

func (d *decoder) oneOf(key string, allowed ...string) string {
	val := strings.ToLower(strings.TrimSpace(d.v.GetString(key)))
	if !slices.Contains(allowed, val) {
		d.fail(key, fmt.Sprintf("%q is not one of %s", val, strings.Join(allowed, ", ")))
	}
	return val
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

// setting decodes one key of the table into its field, as its Kind says.
func (d *decoder) setting(s *Setting, t *draft) {
	if d.err != nil {
		return
	}
	key, field := s.Name, s.into(t)
	switch s.Kind {
	case Text:
		*field.(*string) = d.v.GetString(key)
	case Bool:
		*field.(*bool) = d.v.GetBool(key)
	case Count:
		switch f := field.(type) {
		case *int:
			*f = int(d.integer(key))
		case *int64:
			*f = d.integer(key)
		}
	case MiB:
		*field.(*int64) = d.integer(key) << 20
	case Duration:
		*field.(*time.Duration) = d.dur(key)
	case Fraction:
		*field.(**float64) = d.fraction(key)
	case Price:
		*field.(*float64) = d.price(key)
	case Choice:
		*field.(*string) = d.oneOf(key, s.OneOf...)
	case List:
		*field.(*[]string) = d.list(key)
	case Path:
		*field.(*string) = absPath(strings.TrimSpace(d.v.GetString(key)))
	case Map:
		*field.(*map[string]string) = d.v.GetStringMapString(key)
	case Object:
		if err := d.v.UnmarshalKey(key, field); err != nil {
			d.fail(key, "want "+s.Shape+": "+err.Error())
		}
	}
}

// decode reads every key of the table, fills what the loader computes (the state folder, the Web
// UI link, the store's folder, the sandbox), and checks the configuration for prog.
func decode(v *viper.Viper, file string, prog Program) (Config, error) {
	d := &decoder{v: v}
	t := &draft{Config: Config{File: file}}
	for i := range settings {
		d.setting(&settings[i], t)
	}
	d.finish(t, prog)
	if d.err != nil {
		return Config{}, d.err
	}
	if err := t.required(prog); err != nil {
		return Config{}, err
	}
	c := t.Config
	return c, c.check()
}

// finish fills the values the table leaves to the loader and checks the structured keys. A program
// that calls no model (prog without Worker) or the fake gateway needs no provider's key, so the
// variables gateway.fallbacks and gateway.keys name need not be set there.
func (d *decoder) finish(t *draft, prog Program) {
	c := &t.Config
	c.Dev.StateDir = d.stateDir(c.Dev.StateDir)
	c.Temporal.UIURL = strings.TrimRight(c.Temporal.UIURL, "/")
	switch {
	case strings.EqualFold(c.Temporal.UIURL, NoUI):
		c.Temporal.UIURL = ""
	case c.Temporal.UIURL == "":
		c.Temporal.UIURL = defaultUIURL(c.Temporal.Address, c.Dev.UIPort)
	}
	c.Escalation.UIBase = c.Temporal.UIURL
	noKeys := c.Gateway.Fake || prog&Worker == 0
	d.fallbacks(c.Gateway.Fallbacks, noKeys)
	d.keys(c.Gateway.Keys, noKeys)
	for _, s := range c.MCP {
		if s.Name == "" || (len(s.Command) == 0) == (s.URL == "") {
			d.fail(MCPServers, fmt.Sprintf("server %q needs a name and exactly one of command or url", s.Name))
		}
		if s.Dir != "" && (len(s.Command) == 0 || !filepath.IsAbs(s.Dir)) {
			d.fail(MCPServers, fmt.Sprintf("server %q: dir is the working directory of a server started by command, and must be an absolute path", s.Name))
		}
	}
	if c.Gateway.Model == "" {
		c.Gateway.Model = contract.DefaultModel(c.Gateway.Provider)
	}
	if c.Store.Path == "" && c.Dev.StateDir != "" {
		c.Store.Path = filepath.Join(c.Dev.StateDir, "store")
	}
	if c.Workspaces.Root == "" && c.Dev.StateDir != "" {
		c.Workspaces.Root = filepath.Join(c.Dev.StateDir, "workspaces")
	}
	if u, err := contract.GitHubURL(c.Workspaces.GitHubURL); err != nil {
		d.fail(WorkspacesGitHubURL, err.Error())
	} else {
		c.Workspaces.GitHubURL = u
	}
	if t.sandboxMode == "on" || t.sandboxMode == "true" {
		if t.sandbox.CacheDir == "" {
			t.sandbox.CacheDir = defaultCacheDir()
		}
		c.Sandbox = &t.sandbox
	}
}

// stateDir is dev.state_dir (already absolute), DefaultStateDir when it is not set.
func (d *decoder) stateDir(dir string) string {
	if dir != "" {
		return dir
	}
	dir, err := DefaultStateDir()
	if err != nil {
		d.fail(DevStateDir, "no default: "+err.Error()+"; set dev.state_dir (--state-dir, KEEL_DEV_STATE_DIR) to a folder outside every work directory")
	}
	return dir
}

// fallbacks checks gateway.fallbacks and reads their keys: each needs a known provider and a model,
// and, unless noKeys, a base URL and an api_key_env naming a variable that is set.
func (d *decoder) fallbacks(fbs []Fallback, noKeys bool) {
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
		case noKeys:
		case f.BaseURL == "":
			msg = "base_url is empty"
		case f.APIKeyEnv == "":
			msg = "api_key_env is empty: name the environment variable that holds the key"
		case f.APIKey == "":
			msg = fmt.Sprintf("the environment variable %s (api_key_env) is not set", f.APIKeyEnv)
		}
		if msg != "" {
			d.fail(fmt.Sprintf("%s[%d]", GatewayFallbacks, i), msg)
		}
	}
}

// keys checks gateway.keys and reads them: each names the environment variable that holds it (set,
// unless noKeys) and the one base URL it may be sent to. "default" is the worker's own
// gateway.api_key and cannot be declared again.
func (d *decoder) keys(keys map[string]Key, noKeys bool) {
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
		case k.Value == "" && !noKeys:
			msg = fmt.Sprintf("the environment variable %s (env) is not set", k.Env)
		}
		if msg == "" {
			if _, err := contract.NormalizeBaseURL(k.BaseURL); err != nil {
				msg = err.Error()
			}
		}
		if msg != "" {
			d.fail(GatewayKeys+"."+name, msg)
		}
		keys[name] = k
	}
}

// required refuses the first key the table says one of prog's programs cannot run without, when it
// is empty, with one line saying how to set it.
func (t *draft) required(prog Program) error {
	for i := range settings {
		s := &settings[i]
		need := s.Required & prog
		if need == 0 || !empty(s.into(t)) {
			continue
		}
		if s.Unless != "" && *byName[s.Unless].into(t).(*bool) {
			continue
		}
		how := "set " + EnvName(s.Name)
		if s.Flag != "" && s.FlagIn&prog != 0 {
			how += " or --" + s.Flag
		}
		if s.Unless != "" {
			how += ", or " + EnvName(s.Unless) + "=true"
		}
		msg := "required " + need.need() + " (" + how + ")"
		if s.Why != "" {
			msg += ": " + s.Why
		}
		return &Error{Key: s.Name, Msg: msg}
	}
	return nil
}

// empty says whether the field a key decodes into holds nothing: no text, no entries, zero.
func empty(field any) bool {
	v := reflect.ValueOf(field).Elem()
	switch v.Kind() {
	case reflect.String:
		return strings.TrimSpace(v.String()) == ""
	case reflect.Slice, reflect.Map:
		return v.Len() == 0
	}
	return v.IsZero()
}

// check validates relations between keys, the same in every program.
func (c Config) check() error {
	if c.Store.Backend == "postgres" && c.Store.DSN == "" {
		return &Error{Key: StoreDSN, Msg: "required when store.backend is postgres"}
	}
	if c.Temporal.Address == "" {
		return &Error{Key: TemporalAddress, Msg: "must not be empty"}
	}
	for _, ch := range c.Escalation.Channels {
		if err := c.checkChannel(ch); err != nil {
			return err
		}
	}
	return c.checkCache()
}

// checkChannel refuses a channel Keel does not know, and a known one while a key the table says it
// cannot notify without (Setting.Channel) is empty.
func (c Config) checkChannel(ch string) error {
	if !slices.Contains(contract.Channels, ch) {
		return &Error{Key: EscalationChannels, Msg: fmt.Sprintf("unknown channel %q (use %s)", ch, orList(contract.Channels))}
	}
	t := &draft{Config: c}
	for i := range settings {
		if s := &settings[i]; s.Channel == ch && empty(s.into(t)) {
			return &Error{Key: s.Name, Msg: fmt.Sprintf("required when escalation.channels lists %s", ch)}
		}
	}
	return nil
}

// orList joins names as a person would: "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
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
