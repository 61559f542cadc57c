// Package escalation tells people that an agent session is stuck: the notices the worker posts.
//
// A session that cannot go on records a contract.Escalation and a retryable activity hands it to
// one Notifier per configured channel (Slack, a GitHub pull request, a signed webhook). Every
// notifier is idempotent by escalation ID, because the activity may run more than once. A tool
// call waiting for approval is sent the same way, as a notice with contract.Escalation.Approval
// set (IsApproval); every channel renders it with the tool, its arguments, the digest and the
// starter approve command.
//
// The answers come back through the bots, which the worker does not link: internal/slackbot
// (buttons, the edit modal, /keel) and internal/githubbot (/keel in pull request comments). The
// Slack notice and the Slack bot share the button's value and identifiers (SlackButton).
package escalation
