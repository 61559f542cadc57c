package activities

import (
	"strings"
	"sync"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/gateway"
)

// maxEndpointChains bounds the per-endpoint chains a worker keeps: about one per distinct endpoint
// its sessions name. Past it the cache starts over, which costs each endpoint one new client and a
// fresh breaker, never a failed call.
const maxEndpointChains = 256

// Models is the one way the activities reach a model: the worker's chain (its gateway and
// gateway.fallbacks) and the endpoints sessions name, each served as a chain of its own that puts
// the endpoint before the worker's fallbacks.
type Models struct {
	// Chain is the worker's model followed by its fallbacks.
	Chain *gateway.Chain
	// Endpoints serves the model endpoints sessions name (contract.Endpoint); nil refuses them.
	Endpoints *gateway.Endpoints
	// Rand is the backoff's random source; nil means math/rand. Tests fix it to assert waits.
	Rand func() float64

	mu     sync.Mutex
	chains map[contract.Endpoint]*gateway.Chain
}

// Solo is the models of a worker with one gateway and no fallbacks or session endpoints.
func Solo(p gateway.Provider) *Models {
	return &Models{Chain: gateway.NewChain(0, gateway.Route{Provider: p})}
}

// scripted says every call is answered by a dev stack's scripted fake gateway.
func (m *Models) scripted() bool {
	return m.Endpoints != nil && m.Endpoints.Scripted
}

// chainFor is the chain a model call runs on: the worker's own, or, for a session that names its
// endpoint, that endpoint as the primary route followed by the worker's fallbacks. The chain of an
// endpoint is built once and kept, so its client's connections and its breaker live across calls.
func (m *Models) chainFor(req contract.ModelRequest) (*gateway.Chain, error) {
	if m.scripted() && (req.Endpoint == nil || !req.Endpoint.Scripted) {
		return nil, &gateway.EndpointError{Setting: "gateway.fake on the starter (KEEL_GATEWAY_FAKE=true), or a worker with a real model", Msg: "the session did not ask for the scripted model, " +
			"and this worker answers every call with the scripted fake gateway of a dev stack (starter dev); a real task is never answered by the script"}
	}
	if req.Endpoint == nil || *req.Endpoint == (contract.Endpoint{Scripted: true}) {
		return m.Chain, nil
	}
	ep := *req.Endpoint
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.chains[ep]; ok {
		return c, nil
	}
	if m.Endpoints == nil {
		return nil, &gateway.EndpointError{Setting: "worker wiring", Msg: "this worker serves no session endpoints"}
	}
	cfg, _, err := m.Endpoints.Resolve(ep)
	if err != nil {
		return nil, err
	}
	p, err := gateway.New(cfg)
	if err != nil {
		return nil, &gateway.EndpointError{Setting: "starter run --provider", Msg: err.Error()}
	}
	c := m.Chain.WithPrimary(gateway.Route{Provider: p, Model: ep.Model, Endpoint: &ep})
	if m.chains == nil || len(m.chains) >= maxEndpointChains {
		m.chains = map[contract.Endpoint]*gateway.Chain{}
	}
	m.chains[ep] = c
	return c, nil
}

// reword names, in a failure of a session's own endpoint, the session's settings (the starter's
// flags) where the gateway's message names the worker's: the user chose that base URL, model or
// key, not the worker's operator.
func reword(route gateway.Route, msg string) string {
	ep := route.Endpoint
	if ep == nil {
		return msg
	}
	var pairs []string
	if ep.BaseURL != "" {
		pairs = append(pairs, config.GatewayBaseURL, "the session's base URL (starter run --base-url)")
	}
	if ep.Model != "" {
		pairs = append(pairs, config.GatewayModel, "the session's model (starter run --model)")
	}
	if ep.BaseURL != "" || ep.Key != "" {
		pairs = append(pairs, config.GatewayAPIKey, "the session's key (starter run --api-key-ref, declared in the worker's gateway.keys)")
	}
	if len(pairs) == 0 {
		return msg
	}
	return strings.NewReplacer(pairs...).Replace(msg)
}
