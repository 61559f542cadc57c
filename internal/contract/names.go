package contract

// Model providers (gateway.provider: the wire format spoken) and escalation channels
// (escalation.channels), named once for the configuration, the wiring, the gateway and the
// notifiers.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
	// ProviderOpenAIResponses is OpenAI's Responses API, which carries reasoning items between
	// turns; ProviderOpenAI is its chat completions API.
	ProviderOpenAIResponses = "openai-responses"

	ChannelSlack   = "slack"
	ChannelGitHub  = "github"
	ChannelWebhook = "webhook"
)

// Channels lists every escalation.channels value, in the order messages and docs name them; each
// has a row in package escalation (escalation/channels.go).
var Channels = []string{ChannelSlack, ChannelGitHub, ChannelWebhook}

// Provider is what every program knows of a model provider (gateway.provider, the wire format
// spoken): one row each in ProviderRows. Its wire code is in package gateway and its fake in
// package fakegw, each registered there by Name (TestEveryProviderHasAWire in both).
type Provider struct {
	Name string
	// DefaultModel is the model a session gets when gateway.model is not set.
	DefaultModel string
	// BaseURL is the provider's public API, which a worker without gateway.base_url calls.
	// Providers with the same BaseURL are one service's APIs: a session may switch between them
	// without naming a base URL of its own.
	BaseURL string
	// APIPath ends the base URL of a gateway that speaks this format ("/v1" for OpenAI's APIs);
	// empty where the client adds the whole path itself.
	APIPath string
	// Doc says what the provider speaks, for the configuration's documentation.
	Doc string
}

// ProviderRows are the model providers, in the order messages and docs name them.
var ProviderRows = []Provider{
	{Name: ProviderOpenAI, DefaultModel: "gpt-4o-mini", BaseURL: "https://api.openai.com/v1", APIPath: "/v1",
		Doc: "OpenAI-compatible chat completions"},
	{Name: ProviderOpenAIResponses, DefaultModel: "gpt-4o-mini", BaseURL: "https://api.openai.com/v1", APIPath: "/v1",
		Doc: "OpenAI's Responses API, which carries the model's reasoning items between turns; see below"},
	{Name: ProviderAnthropic, DefaultModel: "claude-sonnet-4-5", BaseURL: "https://api.anthropic.com",
		Doc: "Messages"},
}

// Providers lists every gateway.provider value, for validation and for messages that name them.
var Providers = providerNames()

func providerNames() []string {
	out := make([]string, 0, len(ProviderRows))
	for _, p := range ProviderRows {
		out = append(out, p.Name)
	}
	return out
}

// ProviderNamed is the row of a provider, false for a provider Keel does not know.
func ProviderNamed(name string) (Provider, bool) {
	for _, p := range ProviderRows {
		if p.Name == name {
			return p, true
		}
	}
	return Provider{}, false
}

// DefaultModel is provider's default model, empty for a provider Keel does not know.
func DefaultModel(provider string) string {
	p, _ := ProviderNamed(provider)
	return p.DefaultModel
}
