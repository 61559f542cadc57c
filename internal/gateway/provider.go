package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/keelrun/keel/internal/contract"
)

// Provider names accepted by New.
const (
	ProviderOpenAI    = contract.ProviderOpenAI
	ProviderAnthropic = contract.ProviderAnthropic
	// ProviderOpenAIResponses speaks OpenAI's Responses API.
	ProviderOpenAIResponses = contract.ProviderOpenAIResponses
)

// DefaultMaxTokens bounds a reply when Config.MaxTokens is zero. Anthropic requires a bound on
// every request; OpenAI-compatible gateways get none unless one is configured.
const DefaultMaxTokens = 4096

// Request is one model call in a provider-neutral shape.
type Request struct {
	Model string
	// Messages are the transcript; a system message, if any, comes first.
	Messages []contract.Message
	// Tools are offered to the model; Parameters is a JSON Schema object (raw JSON bytes).
	Tools []contract.ToolSpec
	// Strict appends contract.StrictInstruction, because the previous reply did not parse.
	Strict bool
	// CacheKey groups the requests of one session for the provider's prompt cache (OpenAI's
	// prompt_cache_key); empty sends none.
	CacheKey string
}

// Response is one complete model reply.
type Response struct {
	// Message has role assistant, text content and/or tool calls. Tool call arguments are the raw
	// text the model sent, never re-encoded, because repeat detection compares that text.
	Message contract.Message
	Usage   contract.Usage
	// StopReason is the provider's own finish reason ("stop", "tool_calls", "end_turn", ...).
	StopReason string
}

// Provider streams one model response. onDelta is called for every text delta as it arrives,
// so the caller can show it and count what the user has already seen.
type Provider interface {
	Stream(ctx context.Context, req Request, onDelta func(text string)) (Response, error)
	Name() string
}

// Config selects and configures a provider client.
type Config struct {
	// Provider is one of contract.Providers.
	Provider string
	// BaseURL is the gateway's root: for OpenAI-compatible gateways (both APIs) including /v1
	// (http://host/v1), for Anthropic without it (http://host).
	BaseURL string
	APIKey  string
	// Model is used when a Request names none.
	Model string
	// MaxTokens bounds the reply; zero means DefaultMaxTokens for Anthropic and no bound for
	// OpenAI (max_completion_tokens, or max_output_tokens on the Responses API).
	MaxTokens int64
	// HTTPClient carries the requests; nil means a fresh client on http.DefaultTransport.
	HTTPClient *http.Client
	// NoPromptCache leaves out the prompt-cache hints (Anthropic cache_control breakpoints, OpenAI's
	// prompt_cache_key on both of its APIs): for a gateway that refuses them, and for measuring
	// what they save.
	NoPromptCache bool
}

// wires build each provider's client from its configuration, by provider name: the one line a
// provider's wire code adds here (TestEveryProviderHasAWire); the rest of what Keel knows of a
// provider is its row in contract.ProviderRows.
var wires = map[string]func(Config) Provider{
	ProviderOpenAI:          func(c Config) Provider { return newOpenAI(c) },
	ProviderOpenAIResponses: func(c Config) Provider { return newResponses(c) },
	ProviderAnthropic:       func(c Config) Provider { return newAnthropic(c) },
}

// New builds the provider client that cfg names. The SDKs' own retries are switched off, so
// retries happen in one layer only (the activity), and no provider environment variable is read:
// everything comes from cfg.
func New(cfg Config) (Provider, error) {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	newWire, ok := wires[cfg.Provider]
	if !ok {
		return nil, fmt.Errorf("creating gateway client: unknown provider %q (want one of %s)", cfg.Provider, strings.Join(contract.Providers, ", "))
	}
	return newWire(cfg), nil
}

// modelFor picks the request's model, falling back to the configured one.
func modelFor(req Request, cfg Config) string {
	if req.Model != "" {
		return req.Model
	}
	return cfg.Model
}
