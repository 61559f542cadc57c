package gateway

import (
	"fmt"
	"slices"
	"strings"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
)

// Key is an API key a worker's operator declared for sessions to name (gateway.keys). It is sent
// only to BaseURL: a session may point the worker at any host, but a key goes only where its
// operator meant it to go.
type Key struct {
	Value   string
	BaseURL string
}

// Endpoints turns the model endpoint a session asks for (contract.Endpoint) into a route the
// worker can call. Own is the worker's own gateway: an endpoint's empty fields are taken from it,
// and its key (the one named contract.DefaultKey) is sent only to its own base URL.
type Endpoints struct {
	Own  Config
	Keys map[string]Key
	// Scripted says Own is the scripted fake gateway of a dev stack: it serves sessions that leave
	// the base URL to the worker (or name its own), and refuses one that names any other, which
	// asked for a real model the scripted one would only pretend to be.
	Scripted bool
}

// EndpointError says why a worker cannot serve a session's endpoint and which setting to fix. The
// call fails at once: no later attempt on any worker of the same configuration would do better.
type EndpointError struct {
	// Setting names what to change: a starter flag or a worker's configuration key.
	Setting string
	Msg     string
}

// Error is the reason the user reads.
func (e *EndpointError) Error() string {
	return fmt.Sprintf("this worker cannot serve the session's model endpoint: %s (%s)", e.Msg, e.Setting)
}

// defaultBaseURL is the provider's public API (contract.Provider.BaseURL), which a worker with no
// gateway.base_url calls.
func defaultBaseURL(provider string) string {
	p, _ := contract.ProviderNamed(provider)
	return p.BaseURL
}

// sameService says two providers are APIs of one service, which share a base URL: OpenAI's two
// APIs both live under its /v1.
func sameService(a, b string) bool { return a == b || defaultBaseURL(a) == defaultBaseURL(b) }

// Resolve checks ep against this worker's settings and returns the client configuration that serves
// it, with the name of the key it sends ("" for none). It does no I/O; New builds the client.
func (e *Endpoints) Resolve(ep contract.Endpoint) (Config, string, error) {
	provider := ep.Provider
	if provider == "" {
		provider = e.Own.Provider
	}
	if !slices.Contains(contract.Providers, provider) {
		return Config{}, "", &EndpointError{Setting: "starter run --provider", Msg: fmt.Sprintf("provider %q is not one of %s", provider, strings.Join(contract.Providers, ", "))}
	}
	own, err := e.ownBaseURL()
	if err != nil {
		return Config{}, "", err
	}
	base := own
	if ep.BaseURL == "" && !sameService(provider, e.Own.Provider) {
		return Config{}, "", &EndpointError{Setting: "starter run --base-url", Msg: fmt.Sprintf(
			"the session asks for provider %s without a base URL, and this worker's gateway.base_url serves %s", provider, e.Own.Provider)}
	}
	if ep.BaseURL != "" {
		if base, err = contract.NormalizeBaseURL(ep.BaseURL); err != nil {
			return Config{}, "", &EndpointError{Setting: "starter run --base-url", Msg: err.Error()}
		}
	}
	isOwn := base == own
	if e.Scripted && !isOwn {
		return Config{}, "", &EndpointError{Setting: "a worker with gateway.fake: false and that endpoint's settings", Msg: fmt.Sprintf(
			"the session names %s, and this worker answers every call with the scripted fake gateway of a dev stack (starter dev, demo, run --dev with gateway.fake), which calls no other endpoint", base)}
	}
	name, value, err := e.key(ep.Key, base, isOwn)
	if err != nil {
		return Config{}, "", err
	}
	cfg := e.Own
	cfg.Provider, cfg.BaseURL, cfg.APIKey = provider, base, value
	if ep.Model != "" {
		cfg.Model = ep.Model
	}
	return cfg, name, nil
}

// key picks the key sent to base: the named one if this worker may send it there; with no name,
// the worker's own key for its own base URL, else the first key declared for base, else none.
func (e *Endpoints) key(name, base string, isOwn bool) (string, string, error) {
	switch {
	case name == "" && isOwn, name == contract.DefaultKey && isOwn:
		return contract.DefaultKey, e.Own.APIKey, nil
	case name == contract.DefaultKey:
		return "", "", &EndpointError{Setting: config.GatewayAPIKey, Msg: fmt.Sprintf(
			"the worker's own key is sent only to its own base URL, not to %s; name a key declared for that base URL in gateway.keys", base)}
	case name == "":
		for _, n := range e.names() {
			if k := e.Keys[n]; sameBaseURL(k.BaseURL, base) {
				return n, k.Value, nil
			}
		}
		return "", "", nil
	}
	if err := contract.CheckKeyName(name); err != nil {
		return "", "", &EndpointError{Setting: "starter run --api-key-ref", Msg: err.Error()}
	}
	k, ok := e.Keys[name]
	if !ok {
		declared := "none"
		if names := e.names(); len(names) > 0 {
			declared = strings.Join(names, ", ")
		}
		return "", "", &EndpointError{Setting: config.GatewayKeys, Msg: fmt.Sprintf("the key %q is not declared on this worker (declared: %s)", name, declared)}
	}
	if !sameBaseURL(k.BaseURL, base) {
		return "", "", &EndpointError{Setting: config.GatewayKeys + "." + name + ".base_url", Msg: fmt.Sprintf(
			"the key %q is declared for %s only, not for %s", name, k.BaseURL, base)}
	}
	return name, k.Value, nil
}

func (e *Endpoints) names() []string {
	names := make([]string, 0, len(e.Keys))
	for n := range e.Keys {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ownBaseURL is the worker's own base URL, normalised; the SDK's default when none is configured.
func (e *Endpoints) ownBaseURL() (string, error) {
	raw := e.Own.BaseURL
	if raw == "" {
		raw = defaultBaseURL(e.Own.Provider)
	}
	u, err := contract.NormalizeBaseURL(raw)
	if err != nil {
		return "", &EndpointError{Setting: config.GatewayBaseURL, Msg: err.Error()}
	}
	return u, nil
}

// sameBaseURL compares two base URLs as contract.NormalizeBaseURL spells them.
func sameBaseURL(a, b string) bool {
	na, errA := contract.NormalizeBaseURL(a)
	nb, errB := contract.NormalizeBaseURL(b)
	return errA == nil && errB == nil && na == nb
}
