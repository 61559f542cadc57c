// Package escalation tells people that an agent session is stuck and carries their answer back.
//
// A session that cannot go on records a contract.Escalation and a retryable activity hands it to
// one Notifier per configured channel (Slack, a GitHub pull request, a signed webhook). Every
// notifier is idempotent by escalation ID, because the activity may run more than once. Answers
// come back through an Answerer: the Slack bot (SlackBot) turns verified button clicks, modal
// submissions and slash commands into the session's answer Update, cancel signal or status query,
// and the first valid answer wins.
package escalation
