package toolspec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/textfmt"
)

// maxChildAnswer bounds the part of a sub-agent's answer its parent's model is given.
const maxChildAnswer = 16 << 10

// sideEffects is said of every sub-agent that did not finish: it worked in the same directory.
const sideEffects = "It worked in your work directory and may have changed files before it stopped; " +
	"look at the files it was working on before relying on them."

// DelegateTools picks a sub-agent's tools from its parent's: the named ones (a comma-separated
// list; all when empty), in the parent's order, never delegate when withDelegate is false. It
// reports the names the parent does not have, which refuse the call.
func DelegateTools(parent []contract.ToolSpec, names string, withDelegate bool) ([]contract.ToolSpec, []string) {
	var want, unknown []string
	for n := range strings.SplitSeq(names, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if _, ok := Lookup(parent, n); !ok {
			unknown = append(unknown, n)
		}
		want = append(want, n)
	}
	var out []contract.ToolSpec
	for _, s := range parent {
		if (len(want) == 0 || slices.Contains(want, s.Name)) && (withDelegate || s.Name != Delegate) {
			out = append(out, s)
		}
	}
	return out, unknown
}

// WithoutDelegate is a session's tool list when it may not delegate.
func WithoutDelegate(specs []contract.ToolSpec) []contract.ToolSpec {
	return slices.DeleteFunc(slices.Clone(specs), func(s contract.ToolSpec) bool { return s.Name == Delegate && s.Server == "" })
}

// DelegateRefusedFeedback answers a delegate call that started nothing.
func DelegateRefusedFeedback(why string) string {
	return fmt.Sprintf("No sub-agent was started and nothing changed: %s.", why)
}

// DelegateUnknownToolsFeedback refuses a delegation that names tools the parent does not have.
func DelegateUnknownToolsFeedback(unknown, have []string) string {
	return DelegateRefusedFeedback(fmt.Sprintf("you do not have the tools %s (yours are %s); send the call again naming only yours",
		textfmt.Harmless(strings.Join(unknown, ", ")), strings.Join(have, ", ")))
}

// DelegateAnswerFeedback is a finished sub-agent's answer, as its parent's model reads it.
func DelegateAnswerFeedback(id string, sum contract.Summary) string {
	answer := sum.Answer
	if len(answer) > maxChildAnswer {
		answer = answer[:maxChildAnswer] + "\n[the rest of the answer was cut]"
	}
	return fmt.Sprintf("The sub-agent %s finished (%s, %d tokens). Its answer:\n%s",
		id, textfmt.Count(int64(sum.Turns), "turn"), sum.Tokens, answer)
}

// DelegateEndedFeedback says why a sub-agent ended without finishing, and what that means.
func DelegateEndedFeedback(id string, sum contract.Summary) string {
	var why string
	switch sum.Status {
	case contract.StatusCancelled:
		why = "was cancelled (" + sum.Reason + ")"
	case contract.StatusLimit:
		why = "stopped on its " + sum.Limit + " limit (" + sum.Reason + ")"
	case contract.StatusAborted:
		why = "was stopped by a person (" + sum.Reason + ")"
	default:
		why = "failed: " + sum.Reason
	}
	return fmt.Sprintf("The sub-agent %s %s after %s. %s Do the rest yourself, or delegate it again with a narrower task.",
		id, why, textfmt.Count(int64(sum.Turns), "turn"), sideEffects)
}

// DelegateLostFeedback answers a sub-agent whose end says nothing Keel can read (it was terminated).
func DelegateLostFeedback(id string) string {
	return fmt.Sprintf("The sub-agent %s ended without an answer (it was stopped from outside Keel). %s Do the rest yourself.", id, sideEffects)
}

// DelegateAgainFeedback answers a delegate call whose sub-agent had already been started by an
// earlier run of the same call: it is not started twice.
func DelegateAgainFeedback(id string) string {
	return fmt.Sprintf("The sub-agent %s for this call was already started earlier and is not started twice; nothing new ran. "+
		"Its work is in its own session.", id)
}
