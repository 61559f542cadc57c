// Package escalation tells people that an agent session is stuck and carries their answer back.
//
// A session that cannot go on records a contract.Escalation and a retryable activity hands it to
// one Notifier per configured channel (Slack, a GitHub pull request, a signed webhook). Every
// notifier is idempotent by escalation ID, because the activity may run more than once. Answers
// come back through an Answerer: the Slack bot (SlackBot) turns verified button clicks, modal
// submissions and slash commands into the session's answer Update, cancel signal or status query,
// and the first valid answer wins. A tool call waiting for approval is sent the same way, as a
// notice with contract.Escalation.Approval set (IsApproval); every channel renders it with the
// tool, its arguments, the digest and the starter approve command, and the bot turns a click on
// Approve or Deny into the session's approve_call update (Answerer.Approve).
package escalation
