package fakegw

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/demo"
)

// workspace answers tool calls plausibly against the demo files, in memory.
type workspace struct {
	files map[string]string
	// failWrites makes that many writes fail with the "unchanged, retry as is" feedback.
	failWrites int
}

func newWorkspace(t *testing.T) *workspace {
	t.Helper()
	w := &workspace{files: map[string]string{}}
	for _, name := range demo.Files() {
		src, err := demo.Source(name)
		if err != nil {
			t.Fatal(err)
		}
		w.files[name] = src
	}
	return w
}

// run executes one call and returns the tool message.
func (w *workspace) run(c call) message {
	var a struct{ Path, Content, Command, Old, New, Pattern string }
	if err := json.Unmarshal([]byte(c.Args), &a); err != nil {
		return message{Role: "tool", CallID: c.ID, IsError: true,
			Text: fmt.Sprintf("The arguments of %s are not valid JSON; nothing ran. Send them again as one JSON object.", c.Name)}
	}
	res := func(text string) message { return message{Role: "tool", CallID: c.ID, Text: text} }
	switch c.Name {
	case "list_dir":
		return res(strings.Join(demo.Files(), "\n"))
	case "read_file":
		return res(w.files[a.Path])
	case "write_file":
		if w.failWrites > 0 {
			w.failWrites--
			m := res("The write failed because the disk was busy. The file is unchanged; retry as is.")
			m.IsError = true
			return m
		}
		w.files[a.Path] = a.Content
		return res(fmt.Sprintf("Wrote %d bytes to %s.", len(a.Content), a.Path))
	case "run_command":
		if strings.Contains(w.files[demo.SourceFile], demo.BuggyLine) {
			return res("--- FAIL: TestAdd\n    calc_test.go:9: Add(1, 2) = -1, want 3\nFAIL\nexit status 1")
		}
		return res("ok  \texample.com/calc\t0.002s")
	}
	return res("unknown tool")
}

// conversation drives the fake like an agent loop until the model answers or max turns pass.
type conversation struct {
	t    *testing.T
	srv  *httptest.Server
	wire wireCase
	mode string
	ws   *workspace
	msgs []message
	// calls lists the calls in order as name plus argument text.
	calls []call
	// onTurn may edit the transcript before each request (to add a person's message).
	onTurn func(c *conversation)
}

// run returns the final answer, failing the test if the model does not conclude.
func (c *conversation) run(maxTurns int) string {
	c.t.Helper()
	for range maxTurns {
		if c.onTurn != nil {
			c.onTurn(c)
		}
		o := c.wire.call(c.t, c.srv, c.mode, c.wire.body("You fix Go code.", c.msgs))
		if o.Kind != "stream" {
			c.t.Fatalf("turn %d: %s %d %s", len(c.calls), o.Kind, o.Status, o.Body)
		}
		s := o.Stream
		if s.Deltas < 2 {
			c.t.Errorf("reply streamed %d text deltas, want several", s.Deltas)
		}
		if s.Usage.InputTokens < 1 || s.Usage.OutputTokens < 1 {
			c.t.Errorf("usage %+v, want both counts at least 1", s.Usage)
		}
		c.msgs = append(c.msgs, message{Role: "assistant", Text: s.Text, Calls: s.Calls})
		if len(s.Calls) == 0 {
			if want := map[string]string{"openai": "stop", "anthropic": "end_turn", FormatResponses: "completed"}[c.wire.name]; s.Stop != want {
				c.t.Errorf("final stop reason %q, want %q", s.Stop, want)
			}
			return s.Text
		}
		if want := map[string]string{"openai": "tool_calls", "anthropic": "tool_use", FormatResponses: "completed"}[c.wire.name]; s.Stop != want {
			c.t.Errorf("stop reason %q, want %q", s.Stop, want)
		}
		for _, cl := range s.Calls {
			if cl.ID == "" {
				c.t.Fatalf("tool call %s without an id", cl.Name)
			}
			c.calls = append(c.calls, cl)
			c.msgs = append(c.msgs, c.ws.run(cl))
		}
	}
	c.t.Fatalf("no final answer after %d turns; calls: %s", maxTurns, names(c.calls))
	return ""
}

func names(cs []call) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return strings.Join(out, ",")
}

func newConversation(t *testing.T, srv *httptest.Server, w wireCase, mode string) *conversation {
	return &conversation{t: t, srv: srv, wire: w, mode: mode, ws: newWorkspace(t),
		msgs: []message{{Role: "user", Text: "Make the tests of this module pass."}}}
}

func TestDemoScriptWalksAllSixSteps(t *testing.T) {
	want := []call{
		{Name: "list_dir", Args: `{"path":"."}`},
		{Name: "read_file", Args: `{"path":"calc.go"}`},
		{Name: "run_command", Args: `{"command":"go test ./..."}`},
		{Name: "write_file", Args: mustJSON(map[string]string{"path": demo.SourceFile, "content": demo.FixedSource})},
		{Name: "run_command", Args: `{"command":"go test ./..."}`},
	}
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			srv := httptest.NewServer(New(Options{}).Handler())
			defer srv.Close()
			c := newConversation(t, srv, w, "")
			answer := c.run(10)
			assertCalls(t, c.calls, want)
			if answer != answerFixed {
				t.Errorf("final answer %q, want %q", answer, answerFixed)
			}
			if c.ws.files[demo.SourceFile] != demo.FixedSource {
				t.Errorf("calc.go was not fixed:\n%s", c.ws.files[demo.SourceFile])
			}
		})
	}
}

// assertCalls compares calls by name and parsed arguments.
func assertCalls(t *testing.T, got, want []call) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("calls %s, want %s", names(got), names(want))
	}
	for i := range want {
		if got[i].Name != want[i].Name || !sameJSON(got[i].Args, want[i].Args) {
			t.Errorf("call %d = %s %s, want %s %s", i+1, got[i].Name, got[i].Args, want[i].Name, want[i].Args)
		}
	}
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return mustJSON(x) == mustJSON(y)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestScriptIsStatelessAndRepeatable(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			srv := httptest.NewServer(New(Options{}).Handler())
			defer srv.Close()
			body := w.body("", []message{{Role: "user", Text: "Fix it."}})
			first := w.call(t, srv, "", body)
			second := w.call(t, New(Options{}).testServer(t), "", body)
			if first.Stream.Text != second.Stream.Text || names(first.Stream.Calls) != names(second.Stream.Calls) ||
				first.Stream.Calls[0].ID != second.Stream.Calls[0].ID {
				t.Fatalf("same request got different replies: %+v vs %+v", first.Stream, second.Stream)
			}
		})
	}
}

// testServer serves s on a loopback test server closed with the test.
func (s *Server) testServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv
}

func TestModelBehaviours(t *testing.T) {
	fix := mustJSON(map[string]string{"path": demo.SourceFile, "content": demo.FixedSource})
	read := `{"path":"calc.go"}`
	test := `{"command":"go test ./..."}`
	script := []call{{Name: "list_dir", Args: `{"path":"."}`}, {Name: "read_file", Args: read},
		{Name: "run_command", Args: test}, {Name: "write_file", Args: fix}, {Name: "run_command", Args: test}}
	cases := []struct {
		mode   string
		setup  func(c *conversation)
		want   []call
		answer string
		check  func(t *testing.T, c *conversation)
	}{
		{mode: ModeLongCommand, want: append([]call{{Name: "run_command", Args: `{"command":"sleep 15"}`}}, script...), answer: answerFixed},
		{mode: ModeChattyCommand, want: append([]call{{Name: "run_command", Args: mustJSON(map[string]string{"command": ChattyCommand})}}, script...), answer: answerFixed},
		{mode: ModeHang, want: append([]call{{Name: "run_command", Args: `{"command":"sleep 3600"}`}}, script...), answer: answerFixed},
		{
			mode:   ModeToolError,
			setup:  func(c *conversation) { c.ws.failWrites = 1 },
			want:   []call{script[0], script[1], script[2], script[3], script[3], script[4]},
			answer: answerFixed,
			check: func(t *testing.T, c *conversation) {
				if c.calls[3].Args != c.calls[4].Args {
					t.Errorf("retried write changed its argument text:\n%s\n%s", c.calls[3].Args, c.calls[4].Args)
				}
			},
		},
		{
			mode:   ModeLoop,
			setup:  func(c *conversation) { c.onTurn = repeatDetector(3) },
			want:   []call{{Name: "read_file", Args: read}, {Name: "read_file", Args: read}, {Name: "read_file", Args: read}},
			answer: answerLoop,
		},
		{
			mode:   ModeBreaker,
			setup:  func(c *conversation) { c.onTurn = breakerAfter(3) },
			want:   append([]call{flaky(1), flaky(2), flaky(3), {Name: "read_file", Args: read}}, script...),
			answer: answerFixed,
		},
	}
	for _, tc := range cases {
		for _, w := range wires {
			t.Run(tc.mode+"/"+w.name, func(t *testing.T) {
				c := newConversation(t, New(Options{}).testServer(t), w, tc.mode)
				if tc.setup != nil {
					tc.setup(c)
				}
				answer := c.run(15)
				assertCalls(t, c.calls, tc.want)
				if answer != tc.answer {
					t.Errorf("answer %q, want %q", answer, tc.answer)
				}
				if tc.check != nil {
					tc.check(t, c)
				}
			})
		}
	}
}

func flaky(n int) call {
	return call{Name: FlakyTool, Args: mustJSON(map[string]string{"query": fmt.Sprintf("definition of Add in calc.go, try %d", n)})}
}

// repeatDetector plays the session's repeat detection: once the last n calls were identical,
// the last result is replaced by the "change approach" feedback.
func repeatDetector(n int) func(c *conversation) {
	return func(c *conversation) {
		k := len(c.calls)
		if k < n {
			return
		}
		for _, cl := range c.calls[k-n:] {
			if cl.Name != c.calls[k-1].Name || cl.Args != c.calls[k-1].Args {
				return
			}
		}
		last := &c.msgs[len(c.msgs)-1]
		last.Text = "You have made this call three times; the results are above. Change approach or conclude."
	}
}

// breakerAfter plays the circuit breaker: after n calls of the flaky tool, its last result
// becomes the synthetic "unavailable" answer naming the fallback.
func breakerAfter(n int) func(c *conversation) {
	return func(c *conversation) {
		count := 0
		for _, cl := range c.calls {
			if cl.Name == FlakyTool {
				count++
			}
		}
		last := &c.msgs[len(c.msgs)-1]
		switch {
		case len(c.calls) > 0 && c.calls[len(c.calls)-1].Name == FlakyTool && count >= n:
			last.Text, last.IsError = FlakyTool+" is unavailable right now; use read_file instead.", true
		case len(c.calls) > 0 && c.calls[len(c.calls)-1].Name == FlakyTool:
			last.Text, last.IsError = "The lookup failed; nothing changed.", true
		}
	}
}

func TestBadArgsUntilAPersonSpeaks(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			c := newConversation(t, New(Options{}).testServer(t), w, ModeBadArgs)
			const bad = 4
			c.onTurn = func(c *conversation) {
				if len(c.calls) == bad {
					c.msgs = append(c.msgs, message{Role: "user", Text: contract.PersonPrefix + "Send valid JSON arguments."})
				}
			}
			answer := c.run(15)
			if len(c.calls) != bad+5 {
				t.Fatalf("calls %s, want %d broken ones and the script", names(c.calls), bad)
			}
			seen := map[string]bool{}
			for i, cl := range c.calls[:bad] {
				if json.Valid([]byte(cl.Args)) {
					t.Errorf("broken call %d has valid arguments %s", i+1, cl.Args)
				}
				if seen[cl.Name] {
					t.Errorf("broken call %d repeats tool %s", i+1, cl.Name)
				}
				seen[cl.Name] = true
			}
			for i, cl := range c.calls[bad:] {
				if !json.Valid([]byte(cl.Args)) {
					t.Errorf("call %d after the person spoke has invalid arguments %s", bad+i+1, cl.Args)
				}
			}
			if c.calls[bad].Name != "list_dir" || answer != answerFixed {
				t.Errorf("after the person: %s, answer %q", names(c.calls[bad:]), answer)
			}
		})
	}
}

func TestDecideFromTranscript(t *testing.T) {
	odd := call{ID: "w1", Name: "write_file", Args: `{ "content": "x",  "path": "calc.go" }`}
	user := message{Role: "user", Text: "Fix it."}
	cases := []struct {
		name  string
		mode  string
		msgs  []message
		want  []call // nil for a final answer
		final string
	}{
		{
			name: "retry as is re-sends the exact argument text",
			msgs: []message{user, {Role: "assistant", Calls: []call{odd}},
				{Role: "tool", CallID: "w1", IsError: true, Text: "Write failed. The file is unchanged; retry as is."}},
			want: []call{{Name: odd.Name, Args: odd.Args}},
		},
		{
			name: "an interrupted read is re-sent",
			msgs: []message{user, {Role: "assistant", Calls: []call{{ID: "r1", Name: "read_file", Args: `{"path":"calc.go"}`}}},
				{Role: "tool", CallID: "r1", IsError: true, Text: "The call to read_file was interrupted, so its outcome is unknown. It only reads, so nothing changed; retry as is."}},
			want: []call{demoScript[1].Call},
		},
		{
			name: "other errors move on",
			msgs: []message{user, {Role: "assistant", Calls: []call{{ID: "l1", Name: "list_dir", Args: `{"path":"."}`}}},
				{Role: "tool", CallID: "l1", IsError: true, Text: "The directory could not be listed; nothing changed."}},
			want: []call{demoScript[1].Call},
		},
		{
			name: "loop concludes when told to change approach",
			mode: ModeLoop,
			msgs: []message{user, {Role: "assistant", Calls: []call{{ID: "r1", Name: "read_file", Args: `{"path":"calc.go"}`}}},
				{Role: "tool", CallID: "r1", Text: "You have repeated this call; change approach or conclude."}},
			final: answerLoop,
		},
		{
			name: "a person's message after other text ends bad arguments",
			mode: ModeBadArgs,
			msgs: []message{user, {Role: "assistant", Calls: []call{{ID: "b1", Name: "list_dir", Args: `{"pa`}}},
				{Role: "tool", CallID: "b1", Text: "Invalid JSON."}, {Role: "user", Text: "Note.\n" + contract.PersonPrefix + "Use valid JSON."}},
			want: []call{demoScript[0].Call},
		},
		{
			name: "unavailable without a fallback keeps trying",
			mode: ModeBreaker,
			msgs: []message{user, {Role: "assistant", Calls: []call{flakyWithID(1)}},
				{Role: "tool", CallID: "f1", Text: "flaky_lookup is unavailable."}},
			want: []call{flaky(2)},
		},
		{
			name:  "the last test run failing changes the answer",
			msgs:  finishedScript(user, "FAIL\texample.com/calc"),
			final: answerFailed,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := decide(tc.mode, transcript{Messages: tc.msgs})
			if tc.want == nil {
				if !r.final() || r.Text != tc.final {
					t.Fatalf("reply %+v, want final %q", r, tc.final)
				}
				return
			}
			if len(r.Calls) != len(tc.want) || r.Calls[0].Name != tc.want[0].Name || r.Calls[0].Args != tc.want[0].Args {
				t.Fatalf("calls %+v, want %+v", r.Calls, tc.want)
			}
		})
	}
}

func flakyWithID(n int) call {
	c := flaky(n)
	c.ID = fmt.Sprintf("f%d", n)
	return c
}

// finishedScript is a transcript in which every script step ran; the last test run printed out.
func finishedScript(user message, out string) []message {
	msgs := []message{user}
	for i, s := range demoScript {
		c := s.Call
		c.ID = fmt.Sprintf("s%d", i)
		text := "done"
		if i == len(demoScript)-1 {
			text = out
		}
		msgs = append(msgs, message{Role: "assistant", Calls: []call{c}}, message{Role: "tool", CallID: c.ID, Text: text})
	}
	return msgs
}

// TestDelegateModes: the delegate modes start their sub-agents in the first reply, each task
// carrying the child's mode, and answer once every result is back; a sub-agent's own requests
// follow its task's mode.
func TestDelegateModes(t *testing.T) {
	cases := []struct {
		mode      string
		n         int
		childMode string
	}{
		{ModeDelegate, DelegateCount, ""},
		{ModeDelegateFail, 1, ModeRefusal},
		{ModeDelegateLong, 2, ModeLongCommand},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			first := decide(c.mode, transcript{Messages: []message{{Role: "user", Text: WithMode("fix it", c.mode)}}})
			if len(first.Calls) != c.n {
				t.Fatalf("first reply has %d calls, want %d delegate calls", len(first.Calls), c.n)
			}
			msgs := []message{{Role: "user", Text: WithMode("fix it", c.mode)}, {Role: "assistant", Calls: first.Calls}}
			for i, cl := range first.Calls {
				if cl.Name != "delegate" {
					t.Fatalf("call %d is %s, want delegate", i, cl.Name)
				}
				var args struct{ Task string }
				if err := json.Unmarshal([]byte(cl.Args), &args); err != nil {
					t.Fatal(err)
				}
				if got := (transcript{Messages: []message{{Role: "user", Text: args.Task}}}).mode(); got != c.childMode {
					t.Errorf("sub-agent %d runs mode %q, want %q", i, got, c.childMode)
				}
				first.Calls[i].ID = fmt.Sprint("c", i)
				msgs[1].Calls[i].ID = first.Calls[i].ID
				msgs = append(msgs, message{Role: "tool", CallID: first.Calls[i].ID, Text: "The sub-agent finished."})
			}
			last := decide(c.mode, transcript{Messages: msgs})
			if !last.final() {
				t.Fatalf("after every result the reply has calls %v, want the answer", last.Calls)
			}
		})
	}
}

// TestCommandsModeReadsInPlace: a task's read lines are read_file calls in their place among
// its commands, and the model answers once each has its result.
func TestCommandsModeReadsInPlace(t *testing.T) {
	task := CommandsTask("Check the marker.", "touch started") + "\n" + ReadLine("MARKER") + "\n" + CommandLine("ls")
	want := []call{
		toolCall("run_command", "command", "touch started"),
		toolCall("read_file", "path", "MARKER"),
		toolCall("run_command", "command", "ls"),
	}
	msgs := []message{{Role: "user", Text: task}}
	for i, w := range want {
		r := decide(ModeCommands, transcript{Messages: msgs})
		if len(r.Calls) != 1 || r.Calls[0].Name != w.Name || r.Calls[0].Args != w.Args {
			t.Fatalf("step %d: calls %+v, want %+v", i, r.Calls, w)
		}
		id := fmt.Sprintf("call-%d", i)
		msgs = append(msgs, message{Role: "assistant", Calls: []call{{ID: id, Name: w.Name, Args: w.Args}}},
			message{Role: "tool", CallID: id, Text: "done"})
	}
	if r := decide(ModeCommands, transcript{Messages: msgs}); !r.final() || r.Text != answerCommands {
		t.Fatalf("after every step: %+v, want the final answer", r)
	}
}
