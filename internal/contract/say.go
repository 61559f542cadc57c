package contract

// Steering names: a person adds a message to a running session. Like the escalation answer, it
// exists as an Update (the sender learns whether the session took it) and as a signal (so it can
// be sent from the Web UI's "Send a Signal" form or `temporal workflow signal`).
const (
	UpdateSay = "say"
	SignalSay = "say_signal"
)

// EventSay is the session-level event of a message a person added to a running session.
const EventSay = "say"

// MaxSayBytes bounds one steering message; a longer text is refused with a message saying so.
const MaxSayBytes = 32 << 10

// Say is a person's message for a running session. It joins the transcript as a user message and
// reaches the next model call exactly once. A message sent while a turn runs waits for that turn
// to end; Interrupt cancels the turn in flight first (its partial reply and finished tool results
// are kept), so the message is seen at once.
type Say struct {
	Text string `json:"text"`
	// By and Via say who sent it and from where (cli, slack, ui), for the transcript and watch.
	By  string `json:"by,omitempty"`
	Via string `json:"via,omitempty"`
	// Interrupt cancels the turn in flight before the message is delivered.
	Interrupt bool `json:"interrupt,omitempty"`
}

// SayResult answers the say update: whether the session took the message, and its place among
// the messages people have sent this session.
type SayResult struct {
	Accepted bool   `json:"accepted"`
	Seq      int    `json:"seq,omitempty"`
	Message  string `json:"message"`
}
