// Package slackbot is Keel's Slack app: it turns verified button clicks, edit modal submissions
// and the /keel slash command into a session's answer update, approve_call update, say update,
// cancel signal or status query, through session.Answerer.
//
// Every request is verified (signature, age, replay, team, approver) before anything reaches a
// session, and acknowledged at once; the slow work runs in the background. The first valid answer
// to a notice wins; a second click is told who answered. The notices themselves are posted by the
// worker (escalation.SlackNotifier), which links none of this package.
package slackbot
