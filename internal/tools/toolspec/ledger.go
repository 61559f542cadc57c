package toolspec

import "fmt"

// NotRunFeedback answers a call whose activity never reported and for which the ledger of side
// effects holds no claim: the tool never started, so it is safe to send again unchanged.
func NotRunFeedback(tool string) string {
	return fmt.Sprintf("The call to %s did not start (the worker running it stopped first), so nothing changed; retry as is.", tool)
}

// ClaimFailedFeedback answers a call that could not be recorded before it started: it is not
// run, because a call nobody can account for later could be reported wrongly.
func ClaimFailedFeedback(tool string) string {
	return fmt.Sprintf("%s was not run: the worker could not record the call before starting it, so nothing changed; retry shortly.", tool)
}
