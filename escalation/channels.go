package escalation

import (
	"net/http"

	"github.com/slack-go/slack"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
)

// Channel is one escalation channel: the name escalation.channels lists it by and how its
// notifier is built from the configuration. The keys a channel cannot notify without are checked
// when the configuration loads (internal/config), so New may assume they are set.
type Channel struct {
	Name string
	New  func(config.Escalation) Notifier
}

// channels are the escalation channels, in the order contract.Channels names them
// (TestChannelRows).
var channels = []Channel{
	{Name: contract.ChannelSlack, New: func(e config.Escalation) Notifier {
		var opts []slack.Option
		if e.Slack.APIURL != "" {
			opts = append(opts, slack.OptionAPIURL(e.Slack.APIURL))
		}
		return &SlackNotifier{API: slack.New(e.Slack.BotToken, opts...), Channel: e.Slack.Channel}
	}},
	{Name: contract.ChannelGitHub, New: func(e config.Escalation) Notifier {
		return &GitHubNotifier{BaseURL: e.GitHub.BaseURL, Token: e.GitHub.Token, Repo: e.GitHub.Repo, PR: e.GitHub.PR, Login: e.GitHub.Login, HTTPClient: http.DefaultClient}
	}},
	{Name: contract.ChannelWebhook, New: func(e config.Escalation) Notifier {
		return &WebhookNotifier{URL: e.Webhook.URL, Secret: e.Webhook.Secret, HTTPClient: http.DefaultClient}
	}},
}

// Notifiers builds the notifiers of the channels e lists, by channel name. A name without a row
// is left out: the configuration refuses it when it loads.
func Notifiers(e config.Escalation) map[string]Notifier {
	out := map[string]Notifier{}
	for _, name := range e.Channels {
		for _, ch := range channels {
			if ch.Name == name {
				out[name] = ch.New(e)
			}
		}
	}
	return out
}
