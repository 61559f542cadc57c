package contract

// Model providers (gateway.provider: the wire format spoken) and escalation channels
// (escalation.channels), named once for the configuration, the wiring, the gateway and the
// notifiers.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"

	ChannelSlack   = "slack"
	ChannelGitHub  = "github"
	ChannelWebhook = "webhook"
)
