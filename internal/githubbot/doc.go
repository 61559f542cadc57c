// Package githubbot is Keel's GitHub webhook receiver: it verifies each delivery's signature,
// drops redeliveries, hands pull_request events to the jobs handler and turns `/keel` commands in
// pull request comments into the same answers, approvals and messages a terminal sends, for the
// sessions working on that pull request and only those, from people with write access.
//
// Every effect is idempotent on its own, so a redelivery, a retry after a crash or a second bot
// replica (which shares no memory with the first) changes nothing twice: answers, approvals and
// messages are Temporal updates named after the comment, and the bot's reply is claimed with a
// reaction on the comment (GitHub creates a user's reaction once) and carries a hidden marker
// naming the comment, looked for before anything is done.
package githubbot
