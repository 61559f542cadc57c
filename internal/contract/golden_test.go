package contract

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/jsondur"
	"github.com/keelrun/keel/internal/tools/breaker"
)

// updateGolden rewrites the golden payloads from the current code. Only do that for a payload
// that is new: the golden files are what recorded histories hold, and the test exists to prove
// that a change to the Go types leaves that JSON as it was.
var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/payloads from the current types")

var (
	goldenTime = time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)
	goldenTool = ToolSpec{Name: "read_file", Description: "Read a file.", Parameters: Schema(`{"type":"object","properties":{"path":{"type":"string"}}}`), Writes: true, Server: "fs"}
	goldenCall = ToolCall{ID: "call_1", Name: "read_file", Arguments: `{"path":"a.go"}`}
	goldenMsgs = []Message{
		{Role: RoleUser, Content: "fix the test"},
		{Role: RoleAssistant, Content: "reading", ToolCalls: []ToolCall{goldenCall}, Reasoning: []json.RawMessage{json.RawMessage(`{"id":"rs_1","summary":[]}`)}},
		{Role: RoleTool, Content: "package a", ToolCallID: "call_1", Name: "read_file", IsError: true, Note: "interrupted"},
	}
	goldenMessage = Message{Role: RoleAssistant, Content: "x", ToolCalls: []ToolCall{goldenCall}, ToolCallID: "call_0", Name: "n", IsError: true, Note: "interrupted",
		Reasoning: []json.RawMessage{json.RawMessage(`{"id":"rs_1"}`)}}
	goldenUsage    = Usage{InputTokens: 1200, OutputTokens: 300, CachedTokens: 800, CacheWriteTokens: 100}
	goldenCounters = Counters{ToolCalls: 4, BlockedCalls: 1, GatewayCalls: 3, GatewayAttempts: 5, FallbackCalls: 1, Compactions: 1, CompactionTokens: 700, ReconciledCalls: 1}
	goldenLimits   = Limits{MaxTurns: 30, MaxDuration: jsondur.Duration(30 * time.Minute), MaxTokens: 200000, ContextTokens: 100000, DelegationDepth: 2, MaxChildren: 3}
	goldenRetry    = RetryConfig{Base: jsondur.Duration(400 * time.Millisecond), Cap: jsondur.Duration(8 * time.Second)}
	goldenBreakerC = breaker.Config{Failures: 5, Window: jsondur.Duration(2 * time.Minute), Cooldown: jsondur.Duration(time.Minute)}
	goldenPolicy   = ToolPolicy{
		Approval: "writes", Allow: []string{"read_file"}, Deny: []string{"rm"},
		ToolLimits:      ToolLimits{Commands: []string{"go", "git"}, CommandTimeout: jsondur.Duration(2 * time.Minute)},
		ApprovalTimeout: jsondur.Duration(10 * time.Minute), Breaker: goldenBreakerC,
		Fallbacks: map[string]string{"search": "grep"},
	}
	goldenEscPolicy = EscalationPolicy{Deadline: jsondur.Duration(time.Hour), Channels: []string{"slack", "webhook"}, DefaultAction: ActionAbort, UIBase: "http://127.0.0.1:8233"}
	goldenEndpoint  = &Endpoint{Provider: "openai", BaseURL: "http://127.0.0.1:9000/v1", Model: "gpt-x", Key: "team", Scripted: true}
	goldenBreakers  = breaker.State{Breakers: []breaker.Breaker{
		{Key: "mcp:fs", State: breaker.Open, Expires: []time.Time{goldenTime.Add(time.Minute)}, OpenedAt: goldenTime, RetryAt: goldenTime.Add(time.Minute), ProbeAt: goldenTime.Add(-time.Minute)},
		{Key: "run_command", State: breaker.Closed, Expires: []time.Time{goldenTime}},
	}}
	goldenRepeat     = RepeatState{Key: "read_file\x00{}", Count: 2}
	goldenRepairs    = map[string]int{"*": 1, "read_file": 2}
	goldenRejected   = []string{"turn 2: read_file {bad"}
	goldenGuards     = Guards{Repeat: goldenRepeat, Repairs: goldenRepairs, Rejected: goldenRejected, Breakers: goldenBreakers, Allowed: goldenAllowed}
	goldenAllowed    = []Allowance{{Tool: "run_command", Command: "go test ./...", By: "ana"}}
	goldenModelSet   = ModelSettings{Model: "fast", Endpoint: goldenEndpoint, Retry: goldenRetry, WaitLimits: true}
	goldenToolSet    = ToolSettings{Workdir: "/src", Policy: goldenPolicy, Source: &Source{Repo: "acme/app", Commit: "0123456789abcdef0123456789abcdef01234567", Ref: "main", Workspace: "keel-run-1", From: &WorkspaceAt{Session: "keel-run-0", Turn: 2}}}
	goldenSinks      = []string{"http://127.0.0.1:7000/events"}
	goldenSettings   = Settings{ModelSettings: goldenModelSet, ToolSettings: goldenToolSet, Sinks: goldenSinks, HeartbeatTimeout: jsondur.Duration(9 * time.Second)}
	goldenCompaction = &Compaction{Head: "node-3", Cut: 4}
	goldenApproval   = &Approval{CallID: "call_1", Tool: "write_file", Digest: "abc123", Arguments: `{"path":"a"}`, Deadline: goldenTime}
	goldenEscalation = &Escalation{
		ID: "esc-1", WorkflowID: "wf-1", Reason: ReasonRepairCap, Class: ClassSchema, Summary: "the model cannot fix its arguments",
		Tried: []string{"repair 1"}, Attempts: 3, LastError: "bad json", Calls: []ToolCall{goldenCall}, SpentMS: 1500,
		Link: "http://127.0.0.1:8233/x", GitHub: &GitHubContext{Repo: "keelrun/keel", PR: 22, Commit: "ab09ab4"},
		Choices: []string{ActionRetry, ActionAbort}, Deadline: goldenTime, DefaultAction: ActionAbort,
		Answer: &Answer{EscalationID: "esc-1", Action: ActionEdit, Text: "try b.go", By: "ana", Via: "slack"}, Approval: goldenApproval,
	}
	goldenEvents = []Event{{
		Event: EventToolResult, Seq: 7, WorkflowID: "wf-1", Turn: 2, Text: "ok", Tool: "read_file", CallID: "call_1", Arguments: "{}",
		IsError: true, Attempt: 2, Class: ClassTransport, WaitMS: 300, Limit: LimitTokens, Escalation: goldenEscalation, By: "ana",
		Tokens: 700, SavedTokens: 400, Time: goldenTime,
	}}
	goldenStatus = &SessionStatus{
		Status: StatusRunning, Turn: 2, Running: 3, Usage: goldenUsage, Counters: goldenCounters, Limits: goldenLimits,
		Escalation: goldenEscalation, Approval: goldenApproval, Events: goldenEvents,
		Wait: &UsageWait{Reason: "gateway rate limited", Since: goldenTime, Until: goldenTime.Add(2 * time.Hour)},
	}
	goldenState = SessionState{
		TranscriptRef: TranscriptRef{Head: "node-9", Pending: goldenMsgs}, Turns: 2, Usage: goldenUsage, Counters: goldenCounters, StartedAt: goldenTime,
		Guards: goldenGuards, Events: goldenEvents, EventSeq: 7, Tools: []ToolSpec{goldenTool}, Inbox: goldenMsgs[:1], SaySeq: 2,
		Compaction: goldenCompaction, LastInput: 1200, CompactAt: 5,
		Checks: 3, CheckFails: 2, CheckFailure: "abc123", Waits: 1, WaitedMS: 7200000, ModelTokens: map[string]int64{"openai/gpt-x": 1500},
		Tree: TreeUsage{Tokens: 900, Turns: 2, Last: "wf-0/sub-call_1", Running: 300},
	}
)

// goldenPayloads are fully populated values of every payload that reaches a history, named for
// their golden file under testdata/payloads.
// goldenLive is an activity's live events as its result carries them.
var goldenLive = &LiveEvents{From: 3, Events: []Event{{Event: EventDelta, Seq: 4, WorkflowID: "wf-1", Turn: 3, Text: "half", Time: goldenTime}}}

func goldenPayloads() []struct {
	name string
	v    any
} {
	carry := goldenState
	return []struct {
		name string
		v    any
	}{
		{"session_input", SessionInput{
			Task: "fix the test", SystemPrompt: "be brief", Settings: goldenSettings, Limits: goldenLimits,
			Escalation: goldenEscPolicy, GitHub: &GitHubContext{Repo: "keelrun/keel", PR: 22, Commit: "ab09ab4"},
			TurnsPerRun: 10, Goal: &Goal{Check: "go test ./...", Repeats: 3}, Carry: &carry,
			Delegation: &Delegation{Parent: "wf-0", CallID: "call_1", Ancestors: []string{"wf-0"}, Path: []string{"fix the build", "fix the test"},
				BuiltinTools: "sha256:tools", Tools: []ToolSpec{goldenTool}},
			Watchers: []Watch{{Watcher: "w1", Lease: jsondur.Duration(10 * time.Minute), Until: goldenTime}},
		}},
		{"session_state", goldenState},
		{"turn_input", TurnInput{
			SessionID: "wf-1", Turn: 3, TranscriptRef: TranscriptRef{Head: "node-9", Pending: goldenMsgs}, BuiltinTools: "sha256:tools",
			Tools: []ToolSpec{goldenTool}, Settings: goldenSettings, Guards: goldenGuards,
			Resume: []ToolCall{goldenCall}, Approved: &ApprovalDecision{CallID: "call_1", Digest: "abc123", Approve: true, By: "ana", Reason: "too broad", AllowFor: AllowCommand},
			Compaction: goldenCompaction, Status: goldenStatus, Watched: true, LocalReads: true,
			Delegate: &DelegateContext{SystemPrompt: "be brief", Left: goldenLimits, Escalation: goldenEscPolicy,
				GitHub: &GitHubContext{Repo: "keelrun/keel", PR: 22, Commit: "ab09ab4"}, Ancestors: []string{"wf-0", "wf-1"}, Path: []string{"fix the build"}},
		}},
		{"turn_result", TurnResult{
			Transcript: Transcript{Head: "node-10", Pending: goldenMsgs}, Final: true, Answer: "done", Usage: goldenUsage, Counters: goldenCounters,
			Model:     "openai/gpt-x",
			Guards:    goldenGuards,
			Failure:   &Failure{Class: ClassSchema, Reason: "did not parse", Attempts: 2, Partial: "half", StrictRetryMS: 500, ResetAt: goldenTime},
			Cancelled: true, Partial: "half", NeedsApproval: goldenApproval, Resume: []ToolCall{goldenCall},
			Escalate: &EscalationRequest{Reason: ReasonLoop, Class: ClassUnknown, Summary: "spinning", Tried: []string{"a"}, Attempts: 3, LastError: "x", Calls: []ToolCall{goldenCall}},
			Events:   goldenEvents,
		}},
		{"model_request", ModelRequest{
			SessionID: "wf-1", Turn: 3, Head: "node-9", Append: goldenMsgs, BuiltinTools: "sha256:tools", Tools: []ToolSpec{goldenTool},
			ModelSettings: goldenModelSet, Sinks: goldenSinks,
			Strict: true, PriorAttempts: 2, Compaction: goldenCompaction, Status: goldenStatus, Watched: true,
		}},
		{"model_response", ModelResponse{Head: "node-10", Message: goldenMessage, Usage: goldenUsage, Attempt: 2, Model: "openai/gpt-x", Fallback: true, Live: goldenLive}},
		{"tool_request", ToolRequest{SessionID: "wf-1", Turn: 3, Call: goldenCall, ToolSettings: goldenToolSet, Sinks: goldenSinks, Watched: true, Server: "fs"}},
		{"tool_result", ToolResult{Content: "ok", IsError: true, Changed: true, Fatal: true, Live: goldenLive}},
		{"compact_request", CompactRequest{SessionID: "wf-1", Turn: 3, Head: "node-9", Compaction: goldenCompaction, KeepReplies: 2, MinReplies: 3, ModelSettings: goldenModelSet}},
		{"compact_result", CompactResult{Compaction: goldenCompaction, Replies: 4, Usage: goldenUsage, Attempt: 1, Model: "openai/gpt-x", Fallback: true, SavedTokens: 900}},
		{"limits", goldenLimits},
		{"retry_config", goldenRetry},
		{"tool_policy", goldenPolicy},
		{"escalation_policy", goldenEscPolicy},
		{"breaker_config", goldenBreakerC},
		{"breaker_state", goldenBreakers},
		{"session_status", *goldenStatus},
		{"summary", Summary{
			Status: StatusLimit, WorkflowID: "wf-1", RunID: "run-1", Turns: 3, ToolCalls: 4, BlockedCalls: 1, GatewayCalls: 3,
			GatewayAttempts: 5, FallbackCalls: 1, Compactions: 1, CompactionTokens: 700, ReconciledCalls: 1, Tokens: 1500,
			CachedTokens: 800, Usage: goldenUsage, Limit: LimitTokens, Reason: "tokens", Answer: "partial", Class: ClassBudget,
			Checks: 3, Waits: 1, WaitedMS: 7200000, ModelTokens: map[string]int64{"openai/gpt-x": 1500}, Allowed: goldenAllowed,
			Changes: &Changes{Files: []FileChange{{Path: "init.go", Change: FileCreated, Hidden: "ignored by .gitignore:1: init.go"}},
				Created: 1, Changed: 2, Deleted: 3, Hidden: 1, More: 5, Note: "2 files were too big for a snapshot"},
			Branch: &Branch{Repo: "acme/app", Name: "keel/wf-1", Commit: "1111111111111111111111111111111111111111",
				Parent: "0123456789abcdef0123456789abcdef01234567", Pushed: true, Note: "pushed on a retry"},
			Transcript: &Transcript{Head: "node-9", Pending: goldenMsgs}, Events: goldenEvents,
		}},
		{"review_request", ReviewRequest{SessionID: "wf-1", Workdir: "/work/ws"}},
		{"push_request", PushRequest{SessionID: "wf-1", Source: Source{Repo: "acme/app", Commit: "0123456789abcdef0123456789abcdef01234567",
			Ref: "main", Workspace: "wf-0", From: &WorkspaceAt{Session: "wf-prev", Turn: 1}}, Message: "fix the test", At: goldenTime}},
		{"notify_request", NotifyRequest{Channel: "slack", Escalation: *goldenEscalation}},
		{"ledger_answer", LedgerAnswer{Verdict: "done", Result: ToolResult{Content: "ok", IsError: true, Changed: true, Fatal: true, Live: goldenLive}, Shown: true}},
		{"turn_step", TurnStep{Turn: 3, Tool: "read_file", CallID: "call_1", Arguments: "{}", Since: goldenTime}},
		// Zero values hold what omitempty and omitzero leave out.
		{"session_input_zero", SessionInput{}},
		{"session_state_zero", SessionState{}},
		{"turn_input_zero", TurnInput{}},
		{"turn_result_zero", TurnResult{}},
		{"model_request_zero", ModelRequest{}},
		{"tool_request_zero", ToolRequest{}},
		{"tool_policy_zero", ToolPolicy{}},
		{"limits_zero", Limits{}},
	}
}

// TestPayloadJSONUnchanged: every payload marshals to the JSON its golden file holds (field order
// aside), and the golden JSON decodes into the Go type and encodes back the same. Recorded
// histories hold this JSON, so a refactoring of the types that changes it breaks their replay.
func TestPayloadJSONUnchanged(t *testing.T) {
	for _, p := range goldenPayloads() {
		t.Run(p.name, func(t *testing.T) {
			for _, f := range unsetFields(reflect.ValueOf(p.v), p.name) {
				if strings.HasSuffix(p.name, "_zero") {
					break
				}
				t.Errorf("the golden value leaves %s unset: set it so its JSON is covered", f)
			}
			path := filepath.Join("testdata", "payloads", p.name+".json")
			got, err := json.Marshal(p.v)
			if err != nil {
				t.Fatal(err)
			}
			if *updateGolden {
				var buf bytes.Buffer
				if err := json.Indent(&buf, got, "", "  "); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, append(buf.Bytes(), '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			golden, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("reading the golden payload: %v (write it with -update-golden for a new payload)", err)
			}
			if want, have := decodeAny(t, golden), decodeAny(t, got); !reflect.DeepEqual(want, have) {
				t.Errorf("%T marshals differently from %s\n got: %s\nwant: %s", p.v, path, got, compact(t, golden))
			}
			back := reflect.New(reflect.TypeOf(p.v))
			if err := json.Unmarshal(golden, back.Interface()); err != nil {
				t.Fatalf("decoding %s into %T: %v", path, p.v, err)
			}
			again, err := json.Marshal(back.Elem().Interface())
			if err != nil {
				t.Fatal(err)
			}
			if want, have := decodeAny(t, golden), decodeAny(t, again); !reflect.DeepEqual(want, have) {
				t.Errorf("%s decoded into %T encodes back differently\n got: %s\nwant: %s", path, p.v, again, compact(t, golden))
			}
		})
	}
}

// TestPayloadGoldenCanFail: the comparison notices a field that changed its form, went missing
// or was added, so TestPayloadJSONUnchanged is not vacuous.
func TestPayloadGoldenCanFail(t *testing.T) {
	golden := decodeAny(t, []byte(`{"max_turns":30,"max_duration":"30m0s"}`))
	for _, js := range []string{
		`{"max_turns":30,"max_duration":1800000000000}`,
		`{"max_turns":30}`,
		`{"max_turns":30,"max_duration":"30m0s","limits":{}}`,
	} {
		if reflect.DeepEqual(golden, decodeAny(t, []byte(js))) {
			t.Errorf("%s compares equal to the golden", js)
		}
	}
	if !reflect.DeepEqual(golden, decodeAny(t, []byte(`{"max_duration":"30m0s","max_turns":30}`))) {
		t.Error("field order changed the comparison")
	}
}

// unsetFields names the fields of a struct, and of the structs it holds, that are zero.
func unsetFields(v reflect.Value, at string) []string {
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := range v.NumField() {
		f, name := v.Field(i), at+"."+v.Type().Field(i).Name
		if !v.Type().Field(i).IsExported() {
			continue
		}
		if f.IsZero() {
			out = append(out, name)
			continue
		}
		if f.Kind() == reflect.Struct || f.Kind() == reflect.Pointer {
			out = append(out, unsetFields(f, name)...)
		}
	}
	return out
}

func decodeAny(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return v
}

func compact(t *testing.T, b []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
