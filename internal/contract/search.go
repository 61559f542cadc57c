package contract

import "go.temporal.io/sdk/temporal"

// Search attributes every session keeps up to date, so the Web UI and `temporal workflow list
// --query` can filter sessions (for example all sessions waiting on a person). They are registered
// on the server at start-up.
var (
	StatusKey            = temporal.NewSearchAttributeKeyKeyword("KeelStatus")
	TurnsKey             = temporal.NewSearchAttributeKeyInt64("KeelTurns")
	TokensKey            = temporal.NewSearchAttributeKeyInt64("KeelTokens")
	PendingEscalationKey = temporal.NewSearchAttributeKeyBool("KeelPendingEscalation")
)
