package fakegw

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// openAI speaks the chat completions wire format (POST /v1/chat/completions).
type openAI struct{}

func (openAI) name() string { return contract.ProviderOpenAI }
func (openAI) routes() []string {
	return []string{"POST /v1/chat/completions", "POST /chat/completions"}
}
func (openAI) parse(body []byte) (transcript, error) { return parseOpenAI(body) }

type oaChunk struct {
	ID      string     `json:"id"`
	Object  string     `json:"object"`
	Created int64      `json:"created"`
	Model   string     `json:"model"`
	Choices []oaChoice `json:"choices"`
	Usage   *oaUsage   `json:"usage,omitempty"`
}

type oaChoice struct {
	Index        int     `json:"index"`
	Delta        oaDelta `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type oaDelta struct {
	Role      string        `json:"role,omitempty"`
	Content   *string       `json:"content,omitempty"`
	Refusal   *string       `json:"refusal,omitempty"`
	ToolCalls []oaToolDelta `json:"tool_calls,omitempty"`
}

type oaToolDelta struct {
	Index    int        `json:"index"`
	ID       string     `json:"id,omitempty"`
	Type     string     `json:"type,omitempty"`
	Function oaFunction `json:"function"`
}

type oaFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type oaUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (p plan) oaUsage() *oaUsage {
	u := &oaUsage{PromptTokens: p.InputTokens, CompletionTokens: p.OutputTokens, TotalTokens: p.InputTokens + p.OutputTokens}
	u.PromptTokensDetails.CachedTokens = p.Cache.Read
	return u
}

// finishReason is the chat completions finish_reason of a reply.
func (r reply) finishReason() string {
	switch {
	case r.Refusal != "":
		return "content_filter"
	case len(r.Calls) > 0:
		return "tool_calls"
	}
	return "stop"
}

// streamReply writes: a role chunk, text deltas, each tool call (id and name first, then argument
// fragments), the finish chunk, the usage chunk if asked for, and [DONE].
func (o openAI) streamReply(s *stream, p plan) error {
	chunk := o.chunker(p)
	empty := ""
	if err := s.event("", chunk(oaDelta{Role: "assistant", Content: &empty}, nil)); err != nil {
		return err
	}
	for _, pc := range p.textPieces() {
		if err := s.pause(pc.Wait); err != nil {
			return err
		}
		if err := s.event("", chunk(oaDelta{Content: &pc.Text}, nil)); err != nil {
			return err
		}
		s.shown(pc.Text)
	}
	if p.CutAfterText {
		return nil
	}
	for _, part := range splitWords(p.Reply.Refusal, 2) {
		if err := s.event("", chunk(oaDelta{Refusal: &part}, nil)); err != nil {
			return err
		}
		s.shown(part)
	}
	for i, c := range p.Reply.Calls {
		if err := o.streamCall(s, chunk, p.callID("call_", i), i, c); err != nil {
			return err
		}
	}
	finish := p.Reply.finishReason()
	if err := s.event("", chunk(oaDelta{}, &finish)); err != nil {
		return err
	}
	if p.IncludeUsage {
		u := chunk(oaDelta{}, nil)
		u.Choices, u.Usage = []oaChoice{}, p.oaUsage()
		if err := s.event("", u); err != nil {
			return err
		}
	}
	return s.raw("", "[DONE]")
}

// streamCall writes one tool call: its header chunk, then its arguments in fragments.
func (openAI) streamCall(s *stream, chunk func(oaDelta, *string) oaChunk, id string, i int, c call) error {
	head := oaToolDelta{Index: i, ID: id, Type: "function", Function: oaFunction{Name: c.Name}}
	if err := s.event("", chunk(oaDelta{ToolCalls: []oaToolDelta{head}}, nil)); err != nil {
		return err
	}
	for _, frag := range splitRunes(c.Args, 3) {
		d := oaToolDelta{Index: i, Function: oaFunction{Arguments: frag}}
		if err := s.event("", chunk(oaDelta{ToolCalls: []oaToolDelta{d}}, nil)); err != nil {
			return err
		}
	}
	return nil
}

// chunker returns a builder of chunks that share the response's id, creation time and model.
func (openAI) chunker(p plan) func(oaDelta, *string) oaChunk {
	id, created := "chatcmpl-"+p.ID[:24], time.Now().Unix()
	return func(d oaDelta, finish *string) oaChunk {
		return oaChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: p.Model,
			Choices: []oaChoice{{Index: 0, Delta: d, FinishReason: finish}}}
	}
}

// streamMalformed writes the start of a chunk that never closes its JSON, then [DONE].
func (openAI) streamMalformed(s *stream, p plan) error {
	if err := s.raw("", fmt.Sprintf(`{"id":"chatcmpl-%s","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel`, p.ID[:24])); err != nil {
		return err
	}
	return s.raw("", "[DONE]")
}

// writeError writes {"error":{"message","type","param","code"}}.
func (openAI) writeError(w http.ResponseWriter, status int, e errorBody) {
	if e.Raw != "" {
		writeBody(w, status, []byte(e.Raw))
		return
	}
	var code *string
	if e.OpenAICode != "" {
		code = &e.OpenAICode
	}
	body := map[string]any{"error": map[string]any{"message": e.OpenAIMessage, "type": e.OpenAIType, "param": nil, "code": code}}
	b, _ := json.Marshal(body)
	writeBody(w, status, b)
}

// writeJSON answers a non-streaming request with a whole chat.completion object.
func (openAI) writeJSON(w http.ResponseWriter, p plan) error {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if p.Reply.Text != "" {
		msg["content"] = p.Reply.Text
	}
	if p.Reply.Refusal != "" {
		msg["refusal"] = p.Reply.Refusal
	}
	var calls []map[string]any
	for i, c := range p.Reply.Calls {
		calls = append(calls, map[string]any{"id": p.callID("call_", i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": c.Args}})
	}
	if calls != nil {
		msg["tool_calls"] = calls
	}
	body := map[string]any{
		"id": "chatcmpl-" + p.ID[:24], "object": "chat.completion", "created": time.Now().Unix(), "model": p.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": p.Reply.finishReason()}},
		"usage":   p.oaUsage(),
	}
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encoding chat completion: %w", err)
	}
	writeBody(w, http.StatusOK, b)
	return nil
}

// writeBody sends a JSON body with a status.
func writeBody(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
