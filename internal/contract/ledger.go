package contract

// ToolLedgerActivity reads what the ledger of side effects recorded for one tool call, so a turn
// whose tool activity timed out or lost its worker says "outcome unknown" only when it is.
const ToolLedgerActivity = "ReadToolLedger"

// Verdicts of reading the ledger for a tool call whose activity never reported.
const (
	// LedgerOutcome: the call ended and its outcome was recorded; it is fed back as the result.
	LedgerOutcome = "outcome"
	// LedgerNotRun: no claim was recorded, so the tool never started and nothing changed.
	LedgerNotRun = "not_run"
	// LedgerUnknown: the call was claimed but no outcome was recorded; it may have done anything.
	LedgerUnknown = "unknown"
)

// LedgerRequest is the input of the ReadToolLedger activity: the call to look up, from the turn
// that made it.
type LedgerRequest struct {
	SessionID string `json:"session_id"`
	Turn      int    `json:"turn"`
	CallID    string `json:"call_id"`
}

// LedgerAnswer is what the ledger holds for a call: a verdict, and with LedgerOutcome the result
// the tool returned and whether its tool_result event already reached the watchers.
type LedgerAnswer struct {
	Verdict string     `json:"verdict"`
	Result  ToolResult `json:"result,omitempty"`
	Shown   bool       `json:"shown,omitempty"`
}
