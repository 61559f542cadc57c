package gateway

import (
	"errors"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
)

// TestResolveEndpoint: a session's endpoint takes the worker's own settings for what it leaves
// out; the worker's own key goes only to its own base URL, a declared key only to the base URL it
// was declared for; anything else (a hostile session naming an environment variable, the worker's
// key for a foreign host, a URL with credentials, an unknown provider) is refused naming the
// setting to fix, and never resolves to a key value.
func TestResolveEndpoint(t *testing.T) {
	eps := &Endpoints{
		Own: Config{Provider: ProviderOpenAI, BaseURL: "http://gw.internal:8080/v1/", APIKey: "own-secret", Model: "gpt-own"},
		Keys: map[string]Key{
			"team":   {Value: "team-secret", BaseURL: "https://models.example.com/v1"},
			"claude": {Value: "claude-secret", BaseURL: "https://api.anthropic.com"},
		},
	}
	cases := []struct {
		name string
		ep   contract.Endpoint
		// want* hold for a resolved endpoint; wantSetting for a refused one.
		wantProvider, wantURL, wantModel, wantKeyName, wantKey string
		wantSetting, wantMsg                                   string
	}{
		{name: "model only: the worker's gateway and key", ep: contract.Endpoint{Model: "m2"},
			wantProvider: "openai", wantURL: "http://gw.internal:8080/v1", wantModel: "m2", wantKeyName: "default", wantKey: "own-secret"},
		{name: "own base URL spelled differently", ep: contract.Endpoint{BaseURL: "HTTP://GW.internal:8080/v1"},
			wantProvider: "openai", wantURL: "http://gw.internal:8080/v1", wantModel: "gpt-own", wantKeyName: "default", wantKey: "own-secret"},
		{name: "own base URL, default named", ep: contract.Endpoint{BaseURL: "http://gw.internal:8080/v1", Key: "default"},
			wantProvider: "openai", wantURL: "http://gw.internal:8080/v1", wantModel: "gpt-own", wantKeyName: "default", wantKey: "own-secret"},
		{name: "foreign base URL, no key: none sent", ep: contract.Endpoint{BaseURL: "http://127.0.0.1:11434/v1"},
			wantProvider: "openai", wantURL: "http://127.0.0.1:11434/v1", wantModel: "gpt-own"},
		{name: "foreign base URL with a key declared for it", ep: contract.Endpoint{BaseURL: "https://models.example.com/v1/", Model: "big"},
			wantProvider: "openai", wantURL: "https://models.example.com/v1", wantModel: "big", wantKeyName: "team", wantKey: "team-secret"},
		{name: "declared key named for its base URL", ep: contract.Endpoint{Provider: "anthropic", BaseURL: "https://api.anthropic.com", Key: "claude"},
			wantProvider: "anthropic", wantURL: "https://api.anthropic.com", wantModel: "gpt-own", wantKeyName: "claude", wantKey: "claude-secret"},

		{name: "hostile: the worker's key to a foreign host", ep: contract.Endpoint{BaseURL: "https://attacker.example/v1", Key: "default"},
			wantSetting: config.GatewayAPIKey, wantMsg: "only to its own base URL"},
		{name: "hostile: an environment variable by name", ep: contract.Endpoint{BaseURL: "https://attacker.example/v1", Key: "aws_secret_access_key"},
			wantSetting: config.GatewayKeys, wantMsg: `"aws_secret_access_key" is not declared on this worker (declared: claude, team)`},
		{name: "hostile: a declared key to another host", ep: contract.Endpoint{BaseURL: "https://attacker.example/v1", Key: "team"},
			wantSetting: config.GatewayKeys + ".team.base_url", wantMsg: "declared for https://models.example.com/v1 only"},
		{name: "hostile: a key name that is a shell expansion", ep: contract.Endpoint{BaseURL: "https://attacker.example/v1", Key: "${HOME}"},
			wantSetting: "starter run --api-key-ref", wantMsg: "not a key name"},
		{name: "a key itself instead of its name", ep: contract.Endpoint{Key: "sk-proj-abcdefghijklmnop"},
			wantSetting: "starter run --api-key-ref", wantMsg: "looks like an API key itself"},
		{name: "credentials in the URL", ep: contract.Endpoint{BaseURL: "https://user:pw@models.example.com/v1"},
			wantSetting: "starter run --base-url", wantMsg: "carries credentials"},
		{name: "not an http URL", ep: contract.Endpoint{BaseURL: "file:///etc/passwd"},
			wantSetting: "starter run --base-url", wantMsg: "not an http or https URL"},
		{name: "no host", ep: contract.Endpoint{BaseURL: "http:///v1"},
			wantSetting: "starter run --base-url", wantMsg: "names no host"},
		{name: "unknown provider", ep: contract.Endpoint{Provider: "ollama"},
			wantSetting: "starter run --provider", wantMsg: `"ollama" is not one of openai, openai-responses, anthropic`},
		{name: "OpenAI's other API on the worker's base URL", ep: contract.Endpoint{Provider: "openai-responses"},
			wantProvider: "openai-responses", wantURL: "http://gw.internal:8080/v1", wantModel: "gpt-own", wantKeyName: "default", wantKey: "own-secret"},
		{name: "another provider on the worker's base URL", ep: contract.Endpoint{Provider: "anthropic"},
			wantSetting: "starter run --base-url", wantMsg: "provider anthropic without a base URL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, name, err := eps.Resolve(c.ep)
			if c.wantSetting != "" {
				var ee *EndpointError
				if !errors.As(err, &ee) || ee.Setting != c.wantSetting || !strings.Contains(ee.Error(), c.wantMsg) {
					t.Fatalf("got %v (%+v), want a refusal naming %s: %s", err, cfg, c.wantSetting, c.wantMsg)
				}
				for _, secret := range []string{"own-secret", "team-secret", "claude-secret"} {
					if cfg.APIKey == secret || strings.Contains(err.Error(), secret) {
						t.Fatalf("a refused endpoint resolved to a key: %v", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Provider != c.wantProvider || cfg.BaseURL != c.wantURL || cfg.Model != c.wantModel || name != c.wantKeyName || cfg.APIKey != c.wantKey {
				t.Fatalf("resolved %s %s %s key %q (%q), want %s %s %s key %q (%q)", cfg.Provider, cfg.BaseURL, cfg.Model, name, cfg.APIKey,
					c.wantProvider, c.wantURL, c.wantModel, c.wantKeyName, c.wantKey)
			}
		})
	}
}

// TestResolveEndpointWorkerWithoutBaseURL: a worker with no gateway.base_url calls the provider's
// own API, so its key goes there and nowhere else.
func TestResolveEndpointWorkerWithoutBaseURL(t *testing.T) {
	eps := &Endpoints{Own: Config{Provider: ProviderOpenAI, APIKey: "own-secret"}}
	cfg, name, err := eps.Resolve(contract.Endpoint{BaseURL: "https://api.openai.com/v1/", Model: "gpt-4.1"})
	if err != nil || cfg.APIKey != "own-secret" || name != contract.DefaultKey {
		t.Fatalf("the provider's own API: key %q (%q), %v", name, cfg.APIKey, err)
	}
	cfg, _, err = eps.Resolve(contract.Endpoint{BaseURL: "https://api.openai.com.attacker.example/v1"})
	if err != nil || cfg.APIKey != "" {
		t.Fatalf("a look-alike host got key %q, %v", cfg.APIKey, err)
	}
}

// TestResolveEndpointScripted: a worker whose gateway is a dev stack's scripted fake serves the
// sessions that leave the endpoint to it or name its own base URL, and refuses one that names any
// other base URL, saying that it only answers with the scripted model.
func TestResolveEndpointScripted(t *testing.T) {
	eps := &Endpoints{Own: Config{Provider: ProviderOpenAI, BaseURL: "http://127.0.0.1:4711/v1", APIKey: "fake-gateway-key", Model: "gpt-4o-mini"}, Scripted: true}
	cases := []struct {
		name   string
		ep     contract.Endpoint
		refuse bool
	}{
		{name: "left to the worker", ep: contract.Endpoint{}},
		{name: "a model only", ep: contract.Endpoint{Model: "keel-fallback"}},
		{name: "its own base URL", ep: contract.Endpoint{BaseURL: "http://127.0.0.1:4711/v1/"}},
		{name: "a real provider's API", ep: contract.Endpoint{BaseURL: "https://api.openai.com/v1"}, refuse: true},
		{name: "nothing listens there", ep: contract.Endpoint{BaseURL: "http://127.0.0.1:1/v1"}, refuse: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := eps.Resolve(c.ep)
			var ee *EndpointError
			switch {
			case !c.refuse && err != nil:
				t.Fatalf("refused: %v", err)
			case c.refuse && (!errors.As(err, &ee) || !strings.Contains(err.Error(), "scripted fake gateway") || !strings.Contains(err.Error(), c.ep.BaseURL) || !strings.Contains(ee.Setting, "gateway.fake: false")):
				t.Fatalf("got %v, want a refusal naming %s, the scripted fake gateway and gateway.fake: false", err, c.ep.BaseURL)
			}
		})
	}
}
