// Package tui is the starter's terminal conversation with a person while a session runs: which
// question is open (an escalation to answer, an abort to confirm, an edit being typed, a tool call
// to approve), whether the session is being cancelled, and what each key, status and signal does
// next. Step is a pure transition function over a Model; the starter's follower feeds it events
// from the live sink, the keyboard and status queries, and carries out the Effects it returns
// (printing, sending answers and the cancel, driving the line editor). The rest of the package is
// the thin I/O around it: SplitKeys reads keys, Screen keeps the live status region below printed
// output, LineEditor reads an edit answer.
package tui

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/textfmt"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// State is what the terminal is doing, which decides what keys mean.
type State int

const (
	// Following shows the session; Esc or Ctrl+C cancels it (a watcher detaches instead), other
	// keys do nothing.
	Following State = iota
	// AskingEscalation asks how to answer an escalation: r retries, e edits, a aborts.
	AskingEscalation
	// ConfirmingAbort asks "abort the session?": y aborts, anything else goes back.
	ConfirmingAbort
	// Editing sends keys to the line editor until Enter; Esc goes back.
	Editing
	// AskingApproval asks whether a tool call may run: y approves, n or Esc denies (the session
	// goes on), Ctrl+C cancels the session.
	AskingApproval
	// ConfirmingCancel asks a watcher "cancel the session?": y cancels, anything else goes back.
	ConfirmingCancel
	// Cancelling has sent the cancel and waits for the session to end; a second cancel leaves.
	Cancelling
	// Detached has left the session without waiting for it to end.
	Detached
	// Ended has seen the session's end.
	Ended
	// Reasoning asks why a call is denied (n at the approval prompt): the line editor is open;
	// Enter denies the call with the line as the reason the model reads (an empty line denies
	// without one), Esc goes back to the approval prompt, Ctrl+C cancels the session.
	Reasoning
)

var stateNames = [...]string{"following", "asking-escalation", "confirming-abort", "editing", "asking-approval", "confirming-cancel", "cancelling", "detached", "ended", "reasoning"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// Model is the terminal's state. Interactive and WorkflowID are set once; Step keeps the rest.
type Model struct {
	State State
	// Interactive says a person types at the terminal: without one, questions become the commands
	// that answer them.
	Interactive bool
	// Watching says the terminal watches a session someone else started (starter watch): it is a
	// viewer, so Esc, Ctrl+C, q and every signal detach and leave the session running; only x then
	// y cancels it.
	Watching   bool
	WorkflowID string
	// Escalation is the escalation asked about (AskingEscalation, ConfirmingAbort, Editing).
	Escalation string
	// Approval is the call asked about (AskingApproval).
	Approval *contract.Approval
	// Asked and Offered are the escalation and the call last put to the person, so each is put
	// once even after its question closed.
	Asked   string
	Offered string
	// Back is the state a watcher's "cancel the session?" goes back to when the answer is no.
	Back State
}

// Event is something that happened: one of Status, Key, EditInput, EditDone, Answered, Signal,
// CancelTimeout, SessionEnded.
type Event interface{ event() }

// Status is what the session waits on, from a status the session posted or was asked for.
type Status struct {
	Escalation *contract.Escalation
	Approval   *contract.Approval
}

// EditInput is one read from the terminal while the line editor is open.
type EditInput struct{ Bytes []byte }

// EditDone is the line editor's result; OK is false when it ended without a line (closed, error).
type EditDone struct {
	Line string
	OK   bool
}

// Answered is the outcome of a SendAnswer: whether the session took it.
type Answered struct{ Accepted bool }

// Signal is SIGINT, SIGTERM, SIGHUP or SIGPIPE; Reason is how the cancel names it.
type Signal struct{ Reason string }

// CancelTimeout is the end of the wait after the cancel was sent.
type CancelTimeout struct{}

// SessionEnded is the session's result arriving.
type SessionEnded struct{}

func (Status) event()        {}
func (Key) event()           {}
func (EditInput) event()     {}
func (EditDone) event()      {}
func (Answered) event()      {}
func (Signal) event()        {}
func (CancelTimeout) event() {}
func (SessionEnded) event()  {}

// Effect is what the follower does for a transition, in order: one of Info, SendAnswer,
// SendApproval, SendCancel, OpenEditor, CloseEditor, FeedEditor, Leave, Detach.
type Effect interface{ effect() }

// Info prints a line for the person.
type Info struct{ Text string }

// SendAnswer answers the escalation (then report the outcome as Answered).
type SendAnswer struct{ Answer contract.Answer }

// SendApproval decides the call waiting for approval.
type SendApproval struct{ Decision contract.ApprovalDecision }

// SendCancel sends the cancel signal with Reason and starts the wait; Second names what leaves at
// once from then on.
type SendCancel struct{ Reason, Second string }

// OpenEditor opens the line editor for an edit answer, or with Prompt for another line.
type OpenEditor struct{ Prompt string }

// CloseEditor closes it; LineEnded says Enter ended the row.
type CloseEditor struct{ LineEnded bool }

// FeedEditor hands the editor typed bytes.
type FeedEditor struct{ Bytes []byte }

// Leave stops following without waiting for the session; What names what asked for it.
type Leave struct{ What string }

// Detach stops watching and leaves the session running; What names what asked for it.
type Detach struct{ What string }

func (Info) effect()         {}
func (SendAnswer) effect()   {}
func (SendApproval) effect() {}
func (SendCancel) effect()   {}
func (OpenEditor) effect()   {}
func (CloseEditor) effect()  {}
func (FeedEditor) effect()   {}
func (Leave) effect()        {}
func (Detach) effect()       {}

// Words the person reads; tests and the follower name them from here.
const (
	AskText       = "[R]etry, [E]dit, [A]bort?"
	ConfirmText   = "abort the session? It ends now, as aborted. [y]es / [n]o"
	EditText      = "edit: corrected arguments or an instruction for the model; Enter sends it, Esc goes back"
	DroppedText   = "edit dropped; nothing was sent"
	EmptyEditText = "the edit is empty; nothing was sent"
	NotAborted    = "not aborted"
	// EditPrompt is the line editor's prompt.
	EditPrompt = "edit> "
	// ReasonText asks why a call is denied; ReasonPrompt is the editor's prompt for it.
	ReasonText   = "deny: why not, or what to do instead? The model reads it. Enter denies (an empty line gives no reason), Esc goes back"
	ReasonPrompt = "reason> "
	// KeyCancelReason is the reason a cancel key gives; SecondKey what leaves after it. Reasons
	// say where the cancel came from, not that it is one: the session's summary reads "cancelled:
	// at the terminal", never "cancelled: cancelled ...".
	KeyCancelReason = "at the terminal"
	SecondKey       = "a second Esc or Ctrl+C"
	SecondSignal    = "a second signal"
	// WatchHelp says what a watcher's keys do; CancelConfirmText asks before a watcher cancels.
	WatchHelp         = "watching: Esc, Ctrl+C or q detaches (the session goes on); x cancels the session"
	CancelConfirmText = "cancel the session? It ends now, as cancelled. [y]es / [n]o"
	NotCancelled      = "not cancelled; still watching"
	// WatchCancelReason is the reason a watcher's confirmed cancel gives.
	WatchCancelReason = "from a watching terminal"
	// Names of what detached a watcher.
	DetachEsc   = "Esc"
	DetachCtrlC = "Ctrl+C"
	DetachQuit  = "q"
)

// An approval prompt shows a call's arguments on its line up to approvalShown characters (a
// command that does not run unseen; approvalShownPassive where the line names the command to
// answer with instead); a longer call shows its start and its end and says how much is hidden
// between them and how to see it all (ShowKeyText, the v key), before y can approve it. The
// digest the decision carries is still the whole call's.
const (
	approvalShown        = 400
	approvalShownPassive = 240
	ShowKeyText          = "[v] shows the whole call"
)

// ApprovalKeys are the answers the approval prompt offers for a call of tool: y and n, and the
// two that allow more for the rest of the session (t every call of the tool; c, for run_command,
// every call of exactly this command).
func ApprovalKeys(tool string) string {
	if tool == toolspec.RunCommand {
		return "[y]es / [n]o / for this session: [t] any " + tool + ", [c] this command"
	}
	return "[y]es / [n]o / [t] any " + tool + " for this session"
}

// allowFlags are starter approve's flags that allow more than the call, as a passive line names them.
func allowFlags(tool string) string {
	if tool == toolspec.RunCommand {
		return "--allow-tool | --allow-command"
	}
	return "--allow-tool"
}

// CallPreview is a call's argument text as a prompt shows it (textfmt.Preview): harmless, on one
// line, whole up to n characters, else its start and end with how much is hidden and how to see it.
func CallPreview(args string, n int, how string) string { return textfmt.Preview(args, n, how) }

// Step is the transition function: the model after ev, and what to do about it. It does no I/O.
func Step(m Model, ev Event) (Model, []Effect) {
	if m.State == Detached || m.State == Ended {
		return m, nil
	}
	switch ev := ev.(type) {
	case Status:
		return m.status(ev)
	case Key:
		return m.key(ev)
	case EditInput:
		return m.editInput(ev.Bytes)
	case EditDone:
		return m.editDone(ev)
	case Answered:
		if ev.Accepted && m.asking() {
			m.State, m.Escalation = Following, ""
		}
		return m, nil
	case Signal:
		if m.Watching && m.State != Cancelling {
			return m.detach(ev.Reason)
		}
		if m.State == Cancelling {
			m.State = Detached
			return m, []Effect{Leave{What: SecondSignal}}
		}
		return m.cancel(ev.Reason, SecondSignal)
	case CancelTimeout:
		m.State = Detached
		return m, nil
	case SessionEnded:
		var fx []Effect
		if m.editing() {
			fx = append(fx, CloseEditor{})
		}
		m.State = Ended
		return m, fx
	}
	return m, nil
}

// detach leaves the session running; an open editor closes first.
func (m Model) detach(what string) (Model, []Effect) {
	var fx []Effect
	if m.editing() {
		fx = append(fx, CloseEditor{})
	}
	m.State, m.Escalation, m.Approval = Detached, "", nil
	return m, append(fx, Detach{What: what})
}

// interrupt is what a cancel key does outside a question: a watcher detaches, the terminal that
// started the session cancels it.
func (m Model) interrupt(k Key) (Model, []Effect) {
	if m.Watching {
		if k.Esc {
			return m.detach(DetachEsc)
		}
		return m.detach(DetachCtrlC)
	}
	return m.cancel(KeyCancelReason, SecondKey)
}

// editing reports whether the line editor is open.
func (m Model) editing() bool { return m.State == Editing || m.State == Reasoning }

// asking reports whether a question about an escalation is open.
func (m Model) asking() bool {
	return m.State == AskingEscalation || m.State == ConfirmingAbort || m.State == Editing
}

// status closes a question whose escalation or call no longer waits (answered elsewhere: Slack,
// another terminal, the deadline), then puts a new call or escalation to the person once.
func (m Model) status(st Status) (Model, []Effect) {
	var fx []Effect
	if m.State == Cancelling {
		return m, nil
	}
	e := st.Escalation
	open := e != nil && e.Answer == nil && len(e.Choices) > 0
	if m.asking() && (!open || e.ID != m.Escalation) {
		if m.State == Editing {
			fx = append(fx, CloseEditor{})
		}
		m.State, m.Escalation = Following, ""
	}
	if m.State == ConfirmingCancel {
		return m, fx
	}
	if (m.State == AskingApproval || m.State == Reasoning) && (st.Approval == nil || st.Approval.CallID != m.Approval.CallID) {
		if m.State == Reasoning {
			fx = append(fx, CloseEditor{})
		}
		m.State, m.Approval = Following, nil
	}
	if a := st.Approval; a != nil && m.Offered != a.CallID {
		m.Offered = a.CallID
		if m.Interactive && m.State == Following {
			m.State, m.Approval = AskingApproval, a
			fx = append(fx, Info{fmt.Sprintf("approve %s %s? %s", a.Tool, CallPreview(a.Arguments, approvalShown, ShowKeyText), ApprovalKeys(a.Tool))})
		} else {
			show := fmt.Sprintf("`starter approve %s %s --show` prints the whole call", m.WorkflowID, a.CallID)
			fx = append(fx, Info{fmt.Sprintf("%s %s waits for approval: starter approve %s %s --digest %s [--deny | %s]", a.Tool, CallPreview(a.Arguments, approvalShownPassive, show), m.WorkflowID, a.CallID, a.Digest, allowFlags(a.Tool))})
		}
	}
	if open && m.Asked != e.ID && m.Escalation != e.ID {
		// The escalation itself was printed with the session's events; this only asks.
		m.Asked = e.ID
		if m.Interactive && m.State == Following {
			m.State, m.Escalation = AskingEscalation, e.ID
			fx = append(fx, Info{AskText})
		} else {
			fx = append(fx, Info{fmt.Sprintf("answer with: starter answer %s %s retry|edit|abort [--text ...]", m.WorkflowID, e.ID)})
		}
	}
	return m, fx
}

// key handles one keypress outside the line editor.
func (m Model) key(k Key) (Model, []Effect) {
	switch m.State {
	case Cancelling:
		if k.Cancel {
			m.State = Detached
			return m, []Effect{Leave{What: SecondKey}}
		}
		return m, nil
	case ConfirmingCancel:
		switch {
		case k.Cancel && !k.Esc:
			m.Back = Following
			return m.detach(DetachCtrlC)
		case !k.Cancel && (k.Ch == 'y' || k.Ch == 'Y'):
			m.Back = Following
			return m.cancel(WatchCancelReason, SecondKey)
		}
		m.State, m.Back = m.Back, Following
		return m, []Effect{Info{NotCancelled}}
	case ConfirmingAbort:
		switch {
		case k.Cancel && !k.Esc:
			return m.interrupt(k)
		case !k.Cancel && (k.Ch == 'y' || k.Ch == 'Y'):
			m.State = AskingEscalation
			return m, []Effect{SendAnswer{contract.Answer{EscalationID: m.Escalation, Action: contract.ActionAbort}}}
		}
		m.State = AskingEscalation
		return m, []Effect{Info{NotAborted}, Info{AskText}}
	case Editing:
		// The follower sends what is typed in the editor as EditInput; a Key here means the same.
		return m.editInput(k.bytes())
	}
	if k.Esc && m.State == AskingApproval && !m.Watching {
		// Esc at the approval prompt is "no, not this": the call is denied and the session goes on
		// (the model reads the denial); Ctrl+C still cancels the session.
		a := m.Approval
		m.State, m.Approval = Following, nil
		return m, []Effect{SendApproval{contract.ApprovalDecision{CallID: a.CallID, Digest: a.Digest}}}
	}
	if k.Cancel {
		return m.interrupt(k)
	}
	ch := strings.ToLower(string(k.Ch))
	switch {
	case m.Watching && ch == "q":
		return m.detach(DetachQuit)
	case m.Watching && ch == "x":
		// From any question too (x answers none): n goes back to it.
		m.Back, m.State = m.State, ConfirmingCancel
		return m, []Effect{Info{CancelConfirmText}}
	case m.State == AskingApproval && ch == "y":
		a := m.Approval
		m.State, m.Approval = Following, nil
		return m, []Effect{SendApproval{contract.ApprovalDecision{CallID: a.CallID, Digest: a.Digest, Approve: true}}}
	case m.State == AskingApproval && (ch == "t" || ch == "c"):
		// "Yes, and do not ask again": this tool, or for run_command this exact command, runs
		// without asking for the rest of the session (the session keeps the allowance).
		a, scope := m.Approval, contract.AllowTool
		if ch == "c" && a.Tool == toolspec.RunCommand {
			scope = contract.AllowCommand
		}
		m.State, m.Approval = Following, nil
		return m, []Effect{SendApproval{contract.ApprovalDecision{CallID: a.CallID, Digest: a.Digest, Approve: true, AllowFor: scope}}}
	case m.State == AskingApproval && ch == "n":
		// "No, and here is why": the reason reaches the model with the denial.
		m.State = Reasoning
		return m, []Effect{Info{ReasonText}, OpenEditor{Prompt: ReasonPrompt}}
	case m.State == AskingApproval && ch == "v":
		a := m.Approval
		whole := textfmt.Harmless(a.Arguments)
		return m, []Effect{Info{fmt.Sprintf("the whole %s call (%s):\n%s", a.Tool, textfmt.Count(int64(utf8.RuneCountInString(whole)), "character"), whole)},
			Info{fmt.Sprintf("approve the %s call above? %s", a.Tool, ApprovalKeys(a.Tool))}}
	case m.State != AskingEscalation:
		return m, nil
	case ch == "r":
		return m, []Effect{SendAnswer{contract.Answer{EscalationID: m.Escalation, Action: contract.ActionRetry}}}
	case ch == "a":
		m.State = ConfirmingAbort
		return m, []Effect{Info{ConfirmText}}
	case ch == "e":
		m.State = Editing
		return m, []Effect{Info{EditText}, OpenEditor{}}
	}
	return m, nil
}

// editInput handles a read while the line editor is open: Esc alone steps back without sending,
// Ctrl+C anywhere in it closes the editor and cancels the session, the rest is typing.
func (m Model) editInput(b []byte) (Model, []Effect) {
	if m.State == Reasoning {
		return m.reasonInput(b)
	}
	if m.State != Editing {
		return m, nil
	}
	switch {
	case len(b) == 1 && b[0] == 0x1b:
		m.State = AskingEscalation
		return m, []Effect{CloseEditor{}, Info{DroppedText}, Info{AskText}}
	case strings.IndexByte(string(b), 0x03) >= 0:
		if m.Watching {
			return m.detach(DetachCtrlC)
		}
		m, fx := m.cancel(KeyCancelReason, SecondKey)
		return m, append([]Effect{CloseEditor{}}, fx...)
	}
	return m, []Effect{FeedEditor{Bytes: b}}
}

// reasonInput handles a read while the reason for a denial is typed: Esc alone goes back to the
// approval prompt, Ctrl+C closes the editor and cancels the session (a watcher detaches).
func (m Model) reasonInput(b []byte) (Model, []Effect) {
	switch {
	case len(b) == 1 && b[0] == 0x1b:
		m.State = AskingApproval
		return m, []Effect{CloseEditor{}, Info{fmt.Sprintf("approve the %s call above? %s", m.Approval.Tool, ApprovalKeys(m.Approval.Tool))}}
	case strings.IndexByte(string(b), 0x03) >= 0:
		if m.Watching {
			return m.detach(DetachCtrlC)
		}
		m, fx := m.cancel(KeyCancelReason, SecondKey)
		return m, append([]Effect{CloseEditor{}}, fx...)
	}
	return m, []Effect{FeedEditor{Bytes: b}}
}

// editDone handles the editor's line: an empty or missing one sends nothing and asks again. The
// line of a denial's reason denies the call with it.
func (m Model) editDone(r EditDone) (Model, []Effect) {
	if m.State == Reasoning {
		a := m.Approval
		if !r.OK {
			m.State = AskingApproval
			return m, []Effect{CloseEditor{}, Info{fmt.Sprintf("approve the %s call above? %s", a.Tool, ApprovalKeys(a.Tool))}}
		}
		m.State, m.Approval = Following, nil
		return m, []Effect{CloseEditor{LineEnded: true}, SendApproval{contract.ApprovalDecision{CallID: a.CallID, Digest: a.Digest, Reason: strings.TrimSpace(r.Line)}}}
	}
	if m.State != Editing {
		return m, nil
	}
	m.State = AskingEscalation
	text := strings.TrimSpace(r.Line)
	switch {
	case !r.OK:
		return m, []Effect{CloseEditor{}, Info{DroppedText}, Info{AskText}}
	case text == "":
		return m, []Effect{CloseEditor{LineEnded: true}, Info{EmptyEditText}, Info{AskText}}
	}
	return m, []Effect{CloseEditor{LineEnded: true}, SendAnswer{contract.Answer{EscalationID: m.Escalation, Action: contract.ActionEdit, Text: text}}}
}

// cancel sends the cancel once; any open question closes with it.
func (m Model) cancel(reason, second string) (Model, []Effect) {
	m.State, m.Escalation, m.Approval = Cancelling, "", nil
	return m, []Effect{SendCancel{Reason: reason, Second: second}}
}
