package escalation

import (
	"fmt"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/session"
)

// WaitingOn says what a session waits on a person for, or "" when it waits for nobody.
func WaitingOn(st contract.SessionStatus) string {
	switch e, a := st.Escalation, st.Approval; {
	case session.AwaitsAnswer(e):
		return fmt.Sprintf("escalation %s (%s)", e.ID, Reason(e.Reason))
	case a != nil:
		return fmt.Sprintf("approval of %s (call %s)", a.Tool, a.CallID)
	}
	return ""
}
