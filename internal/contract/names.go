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
