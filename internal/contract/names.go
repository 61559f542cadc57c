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

// Providers lists every gateway.provider value, for validation and for messages that name them.
var Providers = []string{ProviderOpenAI, ProviderOpenAIResponses, ProviderAnthropic}

// defaultModels is the model each provider gets when gateway.model is not set: the one place a
// provider's default model is written.
var defaultModels = map[string]string{
	ProviderOpenAI:          "gpt-4o-mini",
	ProviderOpenAIResponses: "gpt-4o-mini",
	ProviderAnthropic:       "claude-sonnet-4-5",
}

// DefaultModel is provider's default model, empty for a provider Keel does not know.
func DefaultModel(provider string) string { return defaultModels[provider] }
