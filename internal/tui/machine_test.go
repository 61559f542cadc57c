package tui

import (
	"reflect"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// TestStep: every transition of the terminal's state machine, from each state, with the effects
// the follower carries out, in order.
func TestStep(t *testing.T) {
	const wid = "keel-run-1"
	esc := &contract.Escalation{ID: "esc-1", Choices: []string{contract.ActionRetry, contract.ActionEdit, contract.ActionAbort}}
	other := &contract.Escalation{ID: "esc-2", Choices: []string{contract.ActionRetry}}
	answered := &contract.Escalation{ID: "esc-1", Choices: esc.Choices, Answer: &contract.Answer{Action: contract.ActionRetry}}
	notice := &contract.Escalation{ID: "esc-3"}
	call := &contract.Approval{CallID: "c1", Tool: "write_file", Arguments: `{"path":"a.txt"}`, Digest: "d1"}
	call2 := &contract.Approval{CallID: "c2", Tool: "run_command", Arguments: `{"command":"ls"}`, Digest: "d2"}
	long := &contract.Approval{CallID: "c3", Tool: "run_command", Digest: "d3",
		Arguments: `{"command":"sh -c ': ` + strings.Repeat("=", 1956) + `; echo tail \u003e x'"}`}

	following := Model{State: Following, Interactive: true, WorkflowID: wid}
	asking := Model{State: AskingEscalation, Interactive: true, WorkflowID: wid, Escalation: "esc-1", Asked: "esc-1"}
	confirming := asking
	confirming.State = ConfirmingAbort
	editing := asking
	editing.State = Editing
	approving := Model{State: AskingApproval, Interactive: true, WorkflowID: wid, Approval: call, Offered: "c1"}
	cancelling := Model{State: Cancelling, Interactive: true, WorkflowID: wid, Asked: "esc-1"}
	plain := Model{State: Following, WorkflowID: wid}
	watching := Model{State: Following, Interactive: true, Watching: true, WorkflowID: wid}
	detached := with0(watching, Detached)
	confirmingCancel := with0(watching, ConfirmingCancel)
	watchCancelling := with0(watching, Cancelling)
	with := func(m Model, f func(*Model)) Model { f(&m); return m }

	ask := Info{AskText}
	cancelKey := SendCancel{Reason: KeyCancelReason, Second: SecondKey}
	retry := SendAnswer{contract.Answer{EscalationID: "esc-1", Action: contract.ActionRetry}}
	abort := SendAnswer{contract.Answer{EscalationID: "esc-1", Action: contract.ActionAbort}}
	approvePrompt := Info{`approve write_file {"path":"a.txt"}? [y]es / [n]o / [t] any write_file for this session`}

	cases := []struct {
		name string
		from Model
		ev   Event
		to   Model
		fx   []Effect
	}{
		// Following
		{"following: an escalation asks", following, Status{Escalation: esc}, asking, []Effect{ask}},
		{"following: a notice asks nothing", following, Status{Escalation: notice}, following, nil},
		{"following: an answered escalation asks nothing", following, Status{Escalation: answered}, following, nil},
		{"following: an escalation asked before is not asked again", with(following, func(m *Model) { m.Asked = "esc-1" }), Status{Escalation: esc}, with(following, func(m *Model) { m.Asked = "esc-1" }), nil},
		{"following: a call waiting asks", following, Status{Approval: call}, approving, []Effect{approvePrompt}},
		{"following: a call offered before is not offered again", with(following, func(m *Model) { m.Offered = "c1" }), Status{Approval: call}, with(following, func(m *Model) { m.Offered = "c1" }), nil},
		{"following: Esc cancels", following, Key{Cancel: true, Esc: true}, with(cancelling, func(m *Model) { m.Asked = "" }), []Effect{cancelKey}},
		{"following: Ctrl+C cancels", following, Key{Cancel: true}, with(cancelling, func(m *Model) { m.Asked = "" }), []Effect{cancelKey}},
		{"following: r does nothing", following, Key{Ch: 'r'}, following, nil},
		{"following: y does nothing", following, Key{Ch: 'y'}, following, nil},
		{"following: a signal cancels", following, Signal{Reason: "interrupted by a signal (SIGINT)"}, with(cancelling, func(m *Model) { m.Asked = "" }), []Effect{SendCancel{Reason: "interrupted by a signal (SIGINT)", Second: SecondSignal}}},
		{"following: the end", following, SessionEnded{}, with(following, func(m *Model) { m.State = Ended }), nil},
		{"following: a stray edit line is ignored", following, EditDone{Line: "x", OK: true}, following, nil},
		{"following: stray edit input is ignored", following, EditInput{Bytes: []byte("x")}, following, nil},

		// Without a person at the terminal, questions become the commands that answer them.
		{"plain: an escalation names the command", plain, Status{Escalation: esc}, with(plain, func(m *Model) { m.Asked = "esc-1" }),
			[]Effect{Info{"answer with: starter answer keel-run-1 esc-1 retry|edit|abort [--text ...]"}}},
		{"plain: a call names the command", plain, Status{Approval: call}, with(plain, func(m *Model) { m.Offered = "c1" }),
			[]Effect{Info{`write_file {"path":"a.txt"} waits for approval: starter approve keel-run-1 c1 --digest d1 [--deny | --allow-tool]`}}},

		// AskingEscalation
		{"asking: r retries", asking, Key{Ch: 'r'}, asking, []Effect{retry}},
		{"asking: R retries", asking, Key{Ch: 'R'}, asking, []Effect{retry}},
		{"asking: a asks to confirm", asking, Key{Ch: 'a'}, confirming, []Effect{Info{ConfirmText}}},
		{"asking: e opens the editor", asking, Key{Ch: 'e'}, editing, []Effect{Info{EditText}, OpenEditor{}}},
		{"asking: another key does nothing", asking, Key{Ch: 'x'}, asking, nil},
		{"asking: the answer taken closes the question", asking, Answered{Accepted: true}, with(following, func(m *Model) { m.Asked = "esc-1" }), nil},
		{"asking: a refused answer keeps it open", asking, Answered{Accepted: false}, asking, nil},
		{"asking: the same escalation still pending", asking, Status{Escalation: esc}, asking, nil},
		{"asking: answered elsewhere closes the question", asking, Status{Escalation: answered}, with(following, func(m *Model) { m.Asked = "esc-1" }), nil},
		{"asking: gone closes the question", asking, Status{}, with(following, func(m *Model) { m.Asked = "esc-1" }), nil},
		{"asking: a new escalation is asked", asking, Status{Escalation: other}, with(asking, func(m *Model) { m.Escalation, m.Asked = "esc-2", "esc-2" }), []Effect{ask}},
		{"asking: a call waiting meanwhile names the command", asking, Status{Escalation: esc, Approval: call}, with(asking, func(m *Model) { m.Offered = "c1" }),
			[]Effect{Info{`write_file {"path":"a.txt"} waits for approval: starter approve keel-run-1 c1 --digest d1 [--deny | --allow-tool]`}}},
		{"asking: Esc cancels", asking, Key{Cancel: true, Esc: true}, cancelling, []Effect{cancelKey}},

		// ConfirmingAbort
		{"confirming: y aborts", confirming, Key{Ch: 'y'}, asking, []Effect{abort}},
		{"confirming: Y aborts", confirming, Key{Ch: 'Y'}, asking, []Effect{abort}},
		{"confirming: n goes back", confirming, Key{Ch: 'n'}, asking, []Effect{Info{NotAborted}, ask}},
		{"confirming: Esc goes back", confirming, Key{Cancel: true, Esc: true}, asking, []Effect{Info{NotAborted}, ask}},
		{"confirming: Ctrl+C cancels", confirming, Key{Cancel: true}, cancelling, []Effect{cancelKey}},
		{"confirming: answered elsewhere closes it", confirming, Status{}, with(following, func(m *Model) { m.Asked = "esc-1" }), nil},

		// Editing
		{"editing: typing goes to the editor", editing, EditInput{Bytes: []byte("use ")}, editing, []Effect{FeedEditor{Bytes: []byte("use ")}}},
		{"editing: Esc drops the edit", editing, EditInput{Bytes: []byte{0x1b}}, asking, []Effect{CloseEditor{}, Info{DroppedText}, ask}},
		{"editing: an arrow key is typing", editing, EditInput{Bytes: []byte{0x1b, '[', 'D'}}, editing, []Effect{FeedEditor{Bytes: []byte{0x1b, '[', 'D'}}}},
		{"editing: Ctrl+C closes it and cancels", editing, EditInput{Bytes: []byte("ab\x03")}, cancelling, []Effect{CloseEditor{}, cancelKey}},
		{"editing: a Key is what it types", editing, Key{Ch: 'x'}, editing, []Effect{FeedEditor{Bytes: []byte("x")}}},
		{"editing: a line sends the edit", editing, EditDone{Line: "  read calc.go first ", OK: true}, asking,
			[]Effect{CloseEditor{LineEnded: true}, SendAnswer{contract.Answer{EscalationID: "esc-1", Action: contract.ActionEdit, Text: "read calc.go first"}}}},
		{"editing: an empty line sends nothing", editing, EditDone{Line: "  ", OK: true}, asking, []Effect{CloseEditor{LineEnded: true}, Info{EmptyEditText}, ask}},
		{"editing: no line sends nothing", editing, EditDone{OK: false}, asking, []Effect{CloseEditor{}, Info{DroppedText}, ask}},
		{"editing: answered elsewhere closes the editor", editing, Status{Escalation: answered}, with(following, func(m *Model) { m.Asked = "esc-1" }), []Effect{CloseEditor{}}},
		{"editing: a signal closes the editor and cancels", editing, Signal{Reason: "terminated by a signal (SIGTERM)"}, cancelling,
			[]Effect{SendCancel{Reason: "terminated by a signal (SIGTERM)", Second: SecondSignal}}},
		{"editing: the end closes the editor", editing, SessionEnded{}, with(editing, func(m *Model) { m.State = Ended }), []Effect{CloseEditor{}}},

		// AskingApproval
		{"approving: y approves", approving, Key{Ch: 'y'}, with(following, func(m *Model) { m.Offered = "c1" }), []Effect{SendApproval{contract.ApprovalDecision{CallID: "c1", Digest: "d1", Approve: true}}}},
		{"approving: t approves and allows the tool", approving, Key{Ch: 't'}, with(following, func(m *Model) { m.Offered = "c1" }),
			[]Effect{SendApproval{contract.ApprovalDecision{CallID: "c1", Digest: "d1", Approve: true, AllowFor: contract.AllowTool}}}},
		{"approving: c on a tool without commands allows the tool", approving, Key{Ch: 'c'}, with(following, func(m *Model) { m.Offered = "c1" }),
			[]Effect{SendApproval{contract.ApprovalDecision{CallID: "c1", Digest: "d1", Approve: true, AllowFor: contract.AllowTool}}}},
		{"approving: c allows run_command's exact command", with(approving, func(m *Model) { m.Approval, m.Offered = call2, "c2" }), Key{Ch: 'C'}, with(following, func(m *Model) { m.Offered = "c2" }),
			[]Effect{SendApproval{contract.ApprovalDecision{CallID: "c2", Digest: "d2", Approve: true, AllowFor: contract.AllowCommand}}}},
		{"approving: N asks why", approving, Key{Ch: 'N'}, with(approving, func(m *Model) { m.State = Reasoning }), []Effect{Info{ReasonText}, OpenEditor{Prompt: ReasonPrompt}}},
		{"reasoning: a line denies with it", with(approving, func(m *Model) { m.State = Reasoning }), EditDone{Line: " use edit_file ", OK: true}, with(following, func(m *Model) { m.Offered = "c1" }),
			[]Effect{CloseEditor{LineEnded: true}, SendApproval{contract.ApprovalDecision{CallID: "c1", Digest: "d1", Reason: "use edit_file"}}}},
		{"reasoning: an empty line denies without one", with(approving, func(m *Model) { m.State = Reasoning }), EditDone{Line: "", OK: true}, with(following, func(m *Model) { m.Offered = "c1" }),
			[]Effect{CloseEditor{LineEnded: true}, SendApproval{contract.ApprovalDecision{CallID: "c1", Digest: "d1"}}}},
		{"reasoning: Esc goes back to the prompt", with(approving, func(m *Model) { m.State = Reasoning }), EditInput{Bytes: []byte{0x1b}}, approving,
			[]Effect{CloseEditor{}, Info{"approve the write_file call above? [y]es / [n]o / [t] any write_file for this session"}}},
		{"reasoning: typing feeds the editor", with(approving, func(m *Model) { m.State = Reasoning }), EditInput{Bytes: []byte("ab")}, with(approving, func(m *Model) { m.State = Reasoning }),
			[]Effect{FeedEditor{Bytes: []byte("ab")}}},
		{"reasoning: Ctrl+C closes it and cancels", with(approving, func(m *Model) { m.State = Reasoning }), EditInput{Bytes: []byte{0x03}}, with(cancelling, func(m *Model) { m.Offered, m.Asked = "c1", "" }),
			[]Effect{CloseEditor{}, cancelKey}},
		{"reasoning: decided elsewhere closes the editor", with(approving, func(m *Model) { m.State = Reasoning }), Status{}, with(following, func(m *Model) { m.Offered = "c1" }), []Effect{CloseEditor{}}},
		{"approving: Esc denies and the session goes on", approving, Key{Cancel: true, Esc: true}, with(following, func(m *Model) { m.Offered = "c1" }), []Effect{SendApproval{contract.ApprovalDecision{CallID: "c1", Digest: "d1"}}}},
		{"watching: Esc at the approval detaches", with(approving, func(m *Model) { m.Watching = true }), Key{Cancel: true, Esc: true}, with(detached, func(m *Model) { m.Offered = "c1" }), []Effect{Detach{What: DetachEsc}}},
		{"approving: r does nothing", approving, Key{Ch: 'r'}, approving, nil},
		{"approving: v shows the whole call and asks again", approving, Key{Ch: 'v'}, approving,
			[]Effect{Info{"the whole write_file call (16 characters):\n" + `{"path":"a.txt"}`}, Info{"approve the write_file call above? [y]es / [n]o / [t] any write_file for this session"}}},
		{"following: a long call says how much is hidden and how to see it", following, Status{Approval: long}, with(approving, func(m *Model) { m.Approval, m.Offered = long, "c3" }),
			[]Effect{Info{`approve run_command {"command":"sh -c ': ` + strings.Repeat("=", 179) + "…[1600 of 2000 characters hidden; [v] shows the whole call]…" +
				strings.Repeat("=", 177) + `; echo tail \u003e x'"}? [y]es / [n]o / for this session: [t] any run_command, [c] this command`}}},
		{"plain: a long call names the command that shows it", plain, Status{Approval: long}, with(plain, func(m *Model) { m.Offered = "c3" }),
			[]Effect{Info{`run_command {"command":"sh -c ': ` + strings.Repeat("=", 99) + "…[1760 of 2000 characters hidden; `starter approve keel-run-1 c3 --show` prints the whole call]…" +
				strings.Repeat("=", 97) + `; echo tail \u003e x'"} waits for approval: starter approve keel-run-1 c3 --digest d3 [--deny | --allow-tool | --allow-command]`}}},
		{"approving: still waiting", approving, Status{Approval: call}, approving, nil},
		{"approving: decided elsewhere closes it", approving, Status{}, with(following, func(m *Model) { m.Offered = "c1" }), nil},
		{"approving: the next call asks", approving, Status{Approval: call2}, with(approving, func(m *Model) { m.Approval, m.Offered = call2, "c2" }),
			[]Effect{Info{`approve run_command {"command":"ls"}? [y]es / [n]o / for this session: [t] any run_command, [c] this command`}}},
		{"approving: Ctrl+C cancels", approving, Key{Cancel: true}, with(cancelling, func(m *Model) { m.Asked, m.Offered = "", "c1" }), []Effect{cancelKey}},

		// Cancelling
		{"cancelling: a second cancel key leaves", cancelling, Key{Cancel: true, Esc: true}, with(cancelling, func(m *Model) { m.State = Detached }), []Effect{Leave{What: SecondKey}}},
		{"cancelling: a second signal leaves", cancelling, Signal{Reason: "x"}, with(cancelling, func(m *Model) { m.State = Detached }), []Effect{Leave{What: SecondSignal}}},
		{"cancelling: other keys do nothing", cancelling, Key{Ch: 'r'}, cancelling, nil},
		{"cancelling: no new questions", cancelling, Status{Escalation: other, Approval: call}, cancelling, nil},
		{"cancelling: the wait ends", cancelling, CancelTimeout{}, with(cancelling, func(m *Model) { m.State = Detached }), nil},
		{"cancelling: the end", cancelling, SessionEnded{}, with(cancelling, func(m *Model) { m.State = Ended }), nil},

		// A watcher is a viewer: every key and signal that would cancel detaches instead, and only
		// x then y cancels.
		{"watching: Esc detaches", watching, Key{Cancel: true, Esc: true}, detached, []Effect{Detach{What: DetachEsc}}},
		{"watching: Ctrl+C detaches", watching, Key{Cancel: true}, detached, []Effect{Detach{What: DetachCtrlC}}},
		{"watching: q detaches", watching, Key{Ch: 'q'}, detached, []Effect{Detach{What: DetachQuit}}},
		{"watching: Q detaches", watching, Key{Ch: 'Q'}, detached, []Effect{Detach{What: DetachQuit}}},
		{"watching: SIGTERM detaches", watching, Signal{Reason: "terminated by a signal (SIGTERM)"}, detached, []Effect{Detach{What: "terminated by a signal (SIGTERM)"}}},
		{"watching: SIGHUP detaches", watching, Signal{Reason: "the terminal hung up (SIGHUP)"}, detached, []Effect{Detach{What: "the terminal hung up (SIGHUP)"}}},
		{"watching without a terminal: a signal detaches", with(watching, func(m *Model) { m.Interactive = false }), Signal{Reason: "terminated by a signal (SIGTERM)"},
			with(detached, func(m *Model) { m.Interactive = false }), []Effect{Detach{What: "terminated by a signal (SIGTERM)"}}},
		{"watching: q detaches from a question", with(asking, func(m *Model) { m.Watching = true }), Key{Ch: 'q'}, with(detached, func(m *Model) { m.Asked = "esc-1" }), []Effect{Detach{What: DetachQuit}}},
		{"watching: Esc at a question detaches", with(asking, func(m *Model) { m.Watching = true }), Key{Cancel: true, Esc: true}, with(detached, func(m *Model) { m.Asked = "esc-1" }), []Effect{Detach{What: DetachEsc}}},
		{"watching: Ctrl+C at the approval detaches", with(approving, func(m *Model) { m.Watching = true }), Key{Cancel: true}, with(detached, func(m *Model) { m.Offered = "c1" }), []Effect{Detach{What: DetachCtrlC}}},
		{"watching: Ctrl+C in the editor closes it and detaches", with(editing, func(m *Model) { m.Watching = true }), EditInput{Bytes: []byte("ab\x03")}, with(detached, func(m *Model) { m.Asked = "esc-1" }),
			[]Effect{CloseEditor{}, Detach{What: DetachCtrlC}}},
		{"watching: Esc in the abort confirmation goes back", with(confirming, func(m *Model) { m.Watching = true }), Key{Cancel: true, Esc: true}, with(asking, func(m *Model) { m.Watching = true }), []Effect{Info{NotAborted}, ask}},
		{"watching: x asks to confirm the cancel", watching, Key{Ch: 'x'}, confirmingCancel, []Effect{Info{CancelConfirmText}}},
		{"watching: x at the approval asks to confirm", with(approving, func(m *Model) { m.Watching = true }), Key{Ch: 'x'},
			with(approving, func(m *Model) { m.Watching, m.State, m.Back = true, ConfirmingCancel, AskingApproval }), []Effect{Info{CancelConfirmText}}},
		{"confirming cancel: n goes back to the approval", with(approving, func(m *Model) { m.Watching, m.State, m.Back = true, ConfirmingCancel, AskingApproval }), Key{Ch: 'n'},
			with(approving, func(m *Model) { m.Watching = true }), []Effect{Info{NotCancelled}}},
		{"confirming cancel: y cancels", confirmingCancel, Key{Ch: 'y'}, with(watchCancelling, func(m *Model) {}), []Effect{SendCancel{Reason: WatchCancelReason, Second: SecondKey}}},
		{"confirming cancel: n goes back", confirmingCancel, Key{Ch: 'n'}, watching, []Effect{Info{NotCancelled}}},
		{"confirming cancel: Esc goes back", confirmingCancel, Key{Cancel: true, Esc: true}, watching, []Effect{Info{NotCancelled}}},
		{"confirming cancel: Ctrl+C detaches", confirmingCancel, Key{Cancel: true}, detached, []Effect{Detach{What: DetachCtrlC}}},
		{"confirming cancel: no question meanwhile", confirmingCancel, Status{Escalation: esc, Approval: call}, confirmingCancel, nil},
		{"watch cancelling: a second Esc leaves", watchCancelling, Key{Cancel: true, Esc: true}, with(watchCancelling, func(m *Model) { m.State = Detached }), []Effect{Leave{What: SecondKey}}},
		{"watch cancelling: a signal leaves", watchCancelling, Signal{Reason: "x"}, with(watchCancelling, func(m *Model) { m.State = Detached }), []Effect{Leave{What: SecondSignal}}},

		// Detached and Ended take nothing more.
		{"detached: keys", with(cancelling, func(m *Model) { m.State = Detached }), Key{Cancel: true}, with(cancelling, func(m *Model) { m.State = Detached }), nil},
		{"ended: status", with(following, func(m *Model) { m.State = Ended }), Status{Escalation: esc}, with(following, func(m *Model) { m.State = Ended }), nil},
		{"ended: signal", with(following, func(m *Model) { m.State = Ended }), Signal{}, with(following, func(m *Model) { m.State = Ended }), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			to, fx := Step(c.from, c.ev)
			if !reflect.DeepEqual(to, c.to) {
				t.Errorf("model %+v, want %+v", to, c.to)
			}
			if !reflect.DeepEqual(fx, c.fx) {
				t.Errorf("effects %#v, want %#v", fx, c.fx)
			}
		})
	}
}

// with0 is m in state s.
func with0(m Model, s State) Model { m.State = s; return m }

// TestStateNames: every state has a name of its own.
func TestStateNames(t *testing.T) {
	seen := map[string]bool{}
	for s := Following; s <= Ended; s++ {
		if n := s.String(); seen[n] || n == "" {
			t.Fatalf("state %d: name %q repeats or is empty", int(s), n)
		} else {
			seen[n] = true
		}
	}
}

// TestCallPreview: a prompt shows a call harmless and on one line, whole up to n characters, else
// its start and end with the hidden count and how to see it.
func TestCallPreview(t *testing.T) {
	cases := []struct {
		name, args string
		n          int
		want       string
	}{
		{"short", `{"path":"a.txt"}`, 40, `{"path":"a.txt"}`},
		{"escapes shown", "{\"path\":\"a\x1b]0;t\x07\u009b\u202e\"}", 80, `{"path":"a\x1b]0;t\x07\u009b\u202e"}`},
		{"one line", "{\n  \"path\": \"a\"\n}", 40, `{ "path": "a" }`},
		{"long", strings.Repeat("a", 10) + strings.Repeat("b", 10), 9, "aaaa…[12 of 20 characters hidden; see]…bbbb"},
		{"runes, not bytes", strings.Repeat("é", 9), 9, strings.Repeat("é", 9)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := CallPreview(c.args, c.n, "see"); got != c.want {
				t.Fatalf("CallPreview(%q) = %q, want %q", c.args, got, c.want)
			}
		})
	}
}
