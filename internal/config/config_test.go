package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/keelrun/keel/internal/contract"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "keel.yaml")
	if err := os.WriteFile(file, []byte("limits:\n  max_turns: 7\ngateway:\n  api_key: from-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		env   map[string]string
		flags []string
		file  string
		check func(t *testing.T, c Config)
		key   string // want an error naming this key
	}{
		{name: "defaults with the fake gateway", env: map[string]string{"KEEL_GATEWAY_FAKE": "true"}, check: func(t *testing.T, c Config) {
			if c.Temporal.Address != "127.0.0.1:7233" || c.Limits.MaxDuration.Std() != 30*time.Minute || c.Gateway.Retry.Base.Std() != 400*time.Millisecond {
				t.Fatalf("defaults: %+v", c)
			}
		}},
		{name: "file then env then flag", file: file, env: map[string]string{"KEEL_LIMITS_MAX_TOKENS": "900"}, flags: []string{"--max-duration", "3s"}, check: func(t *testing.T, c Config) {
			if c.Limits.MaxTurns != 7 || c.Limits.MaxTokens != 900 || c.Limits.MaxDuration.Std() != 3*time.Second || c.Gateway.APIKey != "from-file" {
				t.Fatalf("precedence: %+v", c.Limits)
			}
		}},
		{name: "TEMPORAL_ADDRESS is honoured", env: map[string]string{"KEEL_GATEWAY_FAKE": "1", "TEMPORAL_ADDRESS": "10.0.0.1:7233"}, check: func(t *testing.T, c Config) {
			if c.Temporal.Address != "10.0.0.1:7233" {
				t.Fatalf("address %q", c.Temporal.Address)
			}
		}},
		{name: "KEEL_ wins over TEMPORAL_", env: map[string]string{"KEEL_GATEWAY_FAKE": "1", "TEMPORAL_ADDRESS": "a:1", "KEEL_TEMPORAL_ADDRESS": "b:2"}, check: func(t *testing.T, c Config) {
			if c.Temporal.Address != "b:2" {
				t.Fatalf("address %q", c.Temporal.Address)
			}
		}},
		{name: "the Responses provider", env: map[string]string{"KEEL_GATEWAY_FAKE": "1", "KEEL_GATEWAY_PROVIDER": "OpenAI-Responses"}, check: func(t *testing.T, c Config) {
			if c.Gateway.Provider != contract.ProviderOpenAIResponses {
				t.Fatalf("provider %q, want %q", c.Gateway.Provider, contract.ProviderOpenAIResponses)
			}
		}},
		{name: "the anthropic provider without a model", env: map[string]string{"KEEL_GATEWAY_FAKE": "1", "KEEL_GATEWAY_PROVIDER": "anthropic"}, check: func(t *testing.T, c Config) {
			if want := contract.DefaultModel(contract.ProviderAnthropic); c.Gateway.Model != want || want == "" {
				t.Fatalf("model %q, want the provider's default %q", c.Gateway.Model, want)
			}
		}},
		{name: "fixed jitter", env: map[string]string{"KEEL_GATEWAY_FAKE": "1", "KEEL_GATEWAY_RETRY_FIXED_JITTER": "0.5"}, check: func(t *testing.T, c Config) {
			if c.Gateway.FixedJitter == nil || *c.Gateway.FixedJitter != 0.5 {
				t.Fatalf("fixed jitter %v, want 0.5", c.Gateway.FixedJitter)
			}
		}},
		{name: "jitter drawn by default", env: map[string]string{"KEEL_GATEWAY_FAKE": "1"}, check: func(t *testing.T, c Config) {
			if c.Gateway.FixedJitter != nil {
				t.Fatalf("fixed jitter %v by default, want a random draw", *c.Gateway.FixedJitter)
			}
		}},
		{name: "Web UI link from dev.ui_port", env: map[string]string{"KEEL_GATEWAY_FAKE": "1", "KEEL_DEV_UI_PORT": "18233"}, check: func(t *testing.T, c Config) {
			if c.Temporal.UIURL != "http://127.0.0.1:18233" || c.Escalation.UIBase != c.Temporal.UIURL {
				t.Fatalf("UI link %q (escalations %q), want http://127.0.0.1:18233", c.Temporal.UIURL, c.Escalation.UIBase)
			}
		}},
		{name: "Web UI link on the server's host", env: map[string]string{"KEEL_GATEWAY_FAKE": "1", "KEEL_TEMPORAL_ADDRESS": "10.0.0.5:7233"}, check: func(t *testing.T, c Config) {
			if c.Temporal.UIURL != "http://10.0.0.5:8233" {
				t.Fatalf("UI link %q, want http://10.0.0.5:8233", c.Temporal.UIURL)
			}
		}},
		{name: "explicit Web UI link wins", env: map[string]string{"KEEL_GATEWAY_FAKE": "1", "KEEL_DEV_UI_PORT": "18233", "KEEL_TEMPORAL_UI_URL": "https://temporal.example.com/"}, check: func(t *testing.T, c Config) {
			if c.Temporal.UIURL != "https://temporal.example.com" {
				t.Fatalf("UI link %q", c.Temporal.UIURL)
			}
		}},
		{name: "no Web UI: no links", env: map[string]string{"KEEL_GATEWAY_FAKE": "1", "KEEL_TEMPORAL_UI_URL": "OFF"}, check: func(t *testing.T, c Config) {
			if c.Temporal.UIURL != "" || c.Escalation.UIBase != "" {
				t.Fatalf("UI link %q (escalations %q), want none", c.Temporal.UIURL, c.Escalation.UIBase)
			}
		}},
		{name: "GitHub at github.com by default", env: map[string]string{"KEEL_GATEWAY_FAKE": "1"}, check: func(t *testing.T, c Config) {
			if c.Workspaces.GitHubURL != "https://github.com" || c.Workspaces.GitTokenHost != "" {
				t.Fatalf("GitHub %q, token host %q; want https://github.com and its host", c.Workspaces.GitHubURL, c.Workspaces.GitTokenHost)
			}
		}},
		{name: "a GitHub Enterprise Server", env: map[string]string{"KEEL_GATEWAY_FAKE": "1", "KEEL_WORKSPACES_GITHUB_URL": "https://GHE.example.com/"}, check: func(t *testing.T, c Config) {
			if c.Workspaces.GitHubURL != "https://ghe.example.com" {
				t.Fatalf("GitHub %q, want https://ghe.example.com", c.Workspaces.GitHubURL)
			}
		}},
		{name: "a GitHub on loopback over http", env: map[string]string{"KEEL_GATEWAY_FAKE": "1", "KEEL_WORKSPACES_GITHUB_URL": "http://127.0.0.1:3000"}, check: func(t *testing.T, c Config) {
			if c.Workspaces.GitHubURL != "http://127.0.0.1:3000" {
				t.Fatalf("GitHub %q", c.Workspaces.GitHubURL)
			}
		}},
		{name: "a GitHub over plain http elsewhere", env: map[string]string{"KEEL_GATEWAY_FAKE": "1", "KEEL_WORKSPACES_GITHUB_URL": "http://ghe.example.com"}, key: WorkspacesGitHubURL},
		{name: "a GitHub URL with credentials", env: map[string]string{"KEEL_GATEWAY_FAKE": "1", "KEEL_WORKSPACES_GITHUB_URL": "https://u:p@ghe.example.com"}, key: WorkspacesGitHubURL},
		{name: "a GitHub that is no URL", env: map[string]string{"KEEL_GATEWAY_FAKE": "1", "KEEL_WORKSPACES_GITHUB_URL": "github.com"}, key: WorkspacesGitHubURL},
		{name: "fixed jitter above one", env: map[string]string{"KEEL_GATEWAY_FAKE": "1", "KEEL_GATEWAY_RETRY_FIXED_JITTER": "1.5"}, key: GatewayRetryFixedJitter},
		{name: "fixed jitter not a number", env: map[string]string{"KEEL_GATEWAY_FAKE": "1", "KEEL_GATEWAY_RETRY_FIXED_JITTER": "half"}, key: GatewayRetryFixedJitter},
		{name: "unknown provider", env: map[string]string{"KEEL_GATEWAY_PROVIDER": "bogus", "KEEL_GATEWAY_FAKE": "1"}, key: GatewayProvider},
		{name: "bad duration", env: map[string]string{"KEEL_GATEWAY_FAKE": "1"}, flags: []string{"--max-duration", "soon"}, key: LimitsMaxDuration},
		{name: "negative turns", env: map[string]string{"KEEL_GATEWAY_FAKE": "1", "KEEL_LIMITS_MAX_TURNS": "-1"}, key: LimitsMaxTurns},
		{name: "missing api key", key: GatewayAPIKey},
		{name: "postgres without dsn", env: map[string]string{"KEEL_GATEWAY_FAKE": "1", "KEEL_STORE_BACKEND": "postgres"}, key: StoreDSN},
		{name: "unknown channel", env: map[string]string{"KEEL_GATEWAY_FAKE": "1", "KEEL_ESCALATION_CHANNELS": "pager"}, key: EscalationChannels},
		{name: "slack without token", env: map[string]string{"KEEL_GATEWAY_FAKE": "1", "KEEL_ESCALATION_CHANNELS": "slack"}, key: EscalationSlackBotToken},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			isolate(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			fs.String("max-duration", "", "")
			if err := fs.Parse(c.flags); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(c.file, fs, nil)
			if c.key != "" {
				if err == nil || !IsError(err) || !strings.Contains(err.Error(), c.key) {
					t.Fatalf("want a config error naming %s, got %v", c.key, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, cfg)
		})
	}
}

func TestUnknownKeyInFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "keel.yaml")
	if err := os.WriteFile(file, []byte("limits:\n  max_turnz: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(file, nil, map[string]any{GatewayFake: true})
	if err == nil || !strings.Contains(err.Error(), "limits.max_turnz") {
		t.Fatalf("want an error naming limits.max_turnz, got %v", err)
	}
}

// TestFallbacks: gateway.fallbacks reads an ordered list whose keys come from the environment, and
// an entry that could not work is refused with a message naming it.
func TestFallbacks(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		fake bool
		want []Fallback
		err  string
	}{
		{
			name: "two fallbacks, keys from the environment",
			yaml: "gateway:\n  api_key: k\n  fallbacks:\n    - {provider: anthropic, base_url: http://a, model: claude-x, api_key_env: FB_KEY_A}\n    - {provider: OpenAI, base_url: http://b/v1, model: gpt-y, api_key_env: FB_KEY_B}\n    - {provider: openai-responses, base_url: http://c/v1, model: gpt-z, api_key_env: FB_KEY_B}\n",
			want: []Fallback{
				{Provider: "anthropic", BaseURL: "http://a", Model: "claude-x", APIKeyEnv: "FB_KEY_A", APIKey: "key-a"},
				{Provider: "openai", BaseURL: "http://b/v1", Model: "gpt-y", APIKeyEnv: "FB_KEY_B", APIKey: "key-b"},
				{Provider: "openai-responses", BaseURL: "http://c/v1", Model: "gpt-z", APIKeyEnv: "FB_KEY_B", APIKey: "key-b"},
			},
		},
		{name: "unknown provider", yaml: "gateway:\n  api_key: k\n  fallbacks:\n    - {provider: bogus, base_url: http://a, model: m, api_key_env: FB_KEY_A}\n", err: `gateway.fallbacks[0]: provider "bogus"`},
		{name: "no model", yaml: "gateway:\n  api_key: k\n  fallbacks:\n    - {provider: openai, base_url: http://a, api_key_env: FB_KEY_A}\n", err: "gateway.fallbacks[0]: model is empty"},
		{name: "key variable not set", yaml: "gateway:\n  api_key: k\n  fallbacks:\n    - {provider: openai, base_url: http://a, model: m, api_key_env: FB_KEY_A}\n    - {provider: openai, base_url: http://a, model: m, api_key_env: FB_UNSET}\n", err: "gateway.fallbacks[1]: the environment variable FB_UNSET (api_key_env) is not set"},
		{name: "the fake gateway needs no key", fake: true, yaml: "gateway:\n  fallbacks:\n    - {provider: openai, model: keel-fallback}\n", want: []Fallback{{Provider: "openai", Model: "keel-fallback"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			t.Setenv("FB_KEY_A", "key-a")
			t.Setenv("FB_KEY_B", "key-b")
			file := filepath.Join(t.TempDir(), "keel.yaml")
			if err := os.WriteFile(file, []byte(c.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(file, nil, map[string]any{GatewayFake: c.fake})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("want an error with %q, got %v", c.err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.Gateway.Fallbacks, c.want) {
				t.Fatalf("fallbacks %+v, want %+v", cfg.Gateway.Fallbacks, c.want)
			}
		})
	}
}

// TestGatewayKeys: gateway.keys declares keys by name, each read from the environment and bound to
// one base URL; an entry that could not be used safely is refused with a message naming it.
func TestGatewayKeys(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		fake bool
		want map[string]Key
		err  string
	}{
		{name: "two keys", yaml: "gateway:\n  api_key: k\n  keys:\n    claude: {env: KEY_A, base_url: https://api.anthropic.com}\n    Team-GW: {env: KEY_B, base_url: http://gw:8080/v1}\n",
			want: map[string]Key{
				"claude":  {Env: "KEY_A", BaseURL: "https://api.anthropic.com", Value: "key-a"},
				"team-gw": {Env: "KEY_B", BaseURL: "http://gw:8080/v1", Value: "key-b"},
			}},
		{name: "none", yaml: "gateway:\n  api_key: k\n", want: map[string]Key{}},
		{name: "variable not set", yaml: "gateway:\n  api_key: k\n  keys:\n    x: {env: KEY_UNSET, base_url: http://gw/v1}\n", err: "gateway.keys.x: the environment variable KEY_UNSET (env) is not set"},
		{name: "no base URL", yaml: "gateway:\n  api_key: k\n  keys:\n    x: {env: KEY_A}\n", err: "gateway.keys.x: base_url is empty"},
		{name: "a base URL that is not http", yaml: "gateway:\n  api_key: k\n  keys:\n    x: {env: KEY_A, base_url: 'file:///etc'}\n", err: "gateway.keys.x: the base URL"},
		{name: "no variable", yaml: "gateway:\n  api_key: k\n  keys:\n    x: {base_url: http://gw/v1}\n", err: "gateway.keys.x: env is empty"},
		{name: "default is the worker's own", yaml: "gateway:\n  api_key: k\n  keys:\n    default: {env: KEY_A, base_url: http://gw/v1}\n", err: "gateway.keys.default: the name default"},
		{name: "a plain string", yaml: "gateway:\n  api_key: k\n  keys:\n    x: KEY_A\n", err: "gateway.keys: want a map"},
		{name: "the fake gateway needs no variable set", fake: true, yaml: "gateway:\n  keys:\n    x: {env: KEY_UNSET, base_url: http://gw/v1}\n",
			want: map[string]Key{"x": {Env: "KEY_UNSET", BaseURL: "http://gw/v1"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			t.Setenv("KEY_A", "key-a")
			t.Setenv("KEY_B", "key-b")
			file := filepath.Join(t.TempDir(), "keel.yaml")
			if err := os.WriteFile(file, []byte(c.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(file, nil, map[string]any{GatewayFake: c.fake})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("want an error with %q, got %v", c.err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.Gateway.Keys, c.want) {
				t.Fatalf("keys %+v, want %+v", cfg.Gateway.Keys, c.want)
			}
		})
	}
}
