package cli

import (
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/keelrun/keel/internal/contract"
)

// reconciledLabels say, in the attempts table, how a tool call whose activity never reported was
// answered from the ledger of side effects.
var reconciledLabels = map[string]string{
	contract.LedgerOutcome: "reconciled: the recorded result was fed back",
	contract.LedgerNotRun:  "reconciled: not run (never started)",
	contract.LedgerUnknown: "reconciled: outcome unknown (started, no outcome recorded)",
}

// reconciled is the outcome of a completed ReadToolLedger, read from its result; "" for any other
// activity's result.
func reconciled(result *commonpb.Payloads) string {
	var ans contract.LedgerAnswer
	if converter.GetDefaultDataConverter().FromPayloads(result, &ans) != nil {
		return ""
	}
	return reconciledLabels[ans.Verdict]
}
