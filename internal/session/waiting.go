package session

import (
	"fmt"

	"github.com/keelrun/keel/escalation"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/textfmt"
)

// WaitingOn says what a session waits on a person for, or "" when it waits for nobody.
func WaitingOn(st contract.SessionStatus) string {
	switch e, a := st.Escalation, st.Approval; {
	case AwaitsAnswer(e):
		return fmt.Sprintf("escalation %s (%s)", e.ID, escalation.Reason(e.Reason))
	case a != nil:
		return fmt.Sprintf("approval of %s (%s)", a.Tool, textfmt.Call(a.CallID))
	}
	return ""
}
