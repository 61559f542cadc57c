package fakegw

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/contract"
)

// transcript is a request's conversation in one shape for both wire formats, which is all the
// scripted model looks at.
type transcript struct {
	Model  string
	System string
	// Messages are in order; an Anthropic user turn with tool_result blocks becomes one tool
	// message per block, followed by a user message for any text.
	Messages []message
	// Stream and IncludeUsage are what the request asked for.
	Stream       bool
	IncludeUsage bool
	// EncryptedReasoning is set when a Responses request includes reasoning.encrypted_content;
	// Reasoning counts the reasoning items it handed back, each verified as one the fake sent.
	EncryptedReasoning bool
	Reasoning          int
}

// message is one entry of a transcript.
type message struct {
	Role  string // system, user, assistant, tool
	Text  string
	Calls []call
	// CallID and IsError are set on tool messages.
	CallID  string
	IsError bool
}

// call is one tool call; Args is the argument text exactly as it travelled.
type call struct {
	ID   string
	Name string
	Args string
}

// hasAssistant reports whether the model has answered before in this conversation: a request
// without one is "the first model call", the only one gateway faults are injected into.
func (t transcript) hasAssistant() bool {
	for _, m := range t.Messages {
		if m.Role == "assistant" {
			return true
		}
	}
	return false
}

// personTexts are the user messages that carry a person's words, in order.
func (t transcript) personTexts() []string {
	var out []string
	for _, m := range t.Messages {
		if m.Role == "user" && strings.HasPrefix(m.Text, contract.PersonPrefix) {
			out = append(out, m.Text)
		}
	}
	return out
}

// task is the first user message's text: the session's task.
func (t transcript) task() string {
	for _, m := range t.Messages {
		if m.Role == "user" {
			return m.Text
		}
	}
	return ""
}

// allText is every piece of text in the request, for substring checks.
func (t transcript) allText() string {
	var b strings.Builder
	b.WriteString(t.System)
	for _, m := range t.Messages {
		b.WriteString("\n")
		b.WriteString(m.Text)
	}
	return b.String()
}

// openAIRequest is the part of a chat completions request the fake reads.
type openAIRequest struct {
	Model         string          `json:"model"`
	Messages      []openAIMessage `json:"messages"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type openAIMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// parseOpenAI reads a chat completions request body.
func parseOpenAI(body []byte) (transcript, error) {
	var req openAIRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return transcript{}, fmt.Errorf("parsing chat completions request: %w", err)
	}
	t := transcript{Model: req.Model, Stream: req.Stream}
	if req.StreamOptions != nil {
		t.IncludeUsage = req.StreamOptions.IncludeUsage
	}
	for _, m := range req.Messages {
		text, err := contentText(m.Content)
		if err != nil {
			return transcript{}, fmt.Errorf("parsing %s message content: %w", m.Role, err)
		}
		role := m.Role
		if role == "developer" {
			role = "system"
		}
		if role == "system" {
			t.System = joinText(t.System, text)
			continue
		}
		msg := message{Role: role, Text: text, CallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			msg.Calls = append(msg.Calls, call{ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments})
		}
		t.Messages = append(t.Messages, msg)
	}
	return t, nil
}

// anthropicRequest is the part of a Messages API request the fake reads.
type anthropicRequest struct {
	Model    string          `json:"model"`
	System   json.RawMessage `json:"system"`
	Stream   bool            `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// parseAnthropic reads a Messages API request body.
func parseAnthropic(body []byte) (transcript, error) {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return transcript{}, fmt.Errorf("parsing messages request: %w", err)
	}
	t := transcript{Model: req.Model, Stream: req.Stream, IncludeUsage: true}
	sys, err := contentText(req.System)
	if err != nil {
		return transcript{}, fmt.Errorf("parsing system prompt: %w", err)
	}
	t.System = sys
	for _, m := range req.Messages {
		msgs, err := anthropicMessages(m.Role, m.Content)
		if err != nil {
			return transcript{}, err
		}
		t.Messages = append(t.Messages, msgs...)
	}
	return t, nil
}

// anthropicMessages splits one Anthropic message into transcript messages.
func anthropicMessages(role string, content json.RawMessage) ([]message, error) {
	if isJSONString(content) {
		text, err := contentText(content)
		return []message{{Role: role, Text: text}}, err
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(content, &blocks); err != nil {
		return nil, fmt.Errorf("parsing %s message content: %w", role, err)
	}
	var out []message
	main := message{Role: role}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			main.Text = joinText(main.Text, b.Text)
		case "tool_use":
			main.Calls = append(main.Calls, call{ID: b.ID, Name: b.Name, Args: inputText(b.Input)})
		case "tool_result":
			text, err := contentText(b.Content)
			if err != nil {
				return nil, fmt.Errorf("parsing tool result content: %w", err)
			}
			out = append(out, message{Role: "tool", Text: text, CallID: b.ToolUseID, IsError: b.IsError})
		}
	}
	if main.Text != "" || len(main.Calls) > 0 || len(out) == 0 {
		out = append(out, main)
	}
	return out, nil
}

// inputText is the argument text of a tool_use block. A client that could not send a model's
// broken arguments as an object may send them as a JSON string; that string is the text.
func inputText(raw json.RawMessage) string {
	if isJSONString(raw) {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// contentText flattens a content field that is either a string or a list of text parts.
func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if isJSONString(raw) {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var text string
	for _, p := range parts {
		text = joinText(text, p.Text)
	}
	return text, nil
}

func isJSONString(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return strings.HasPrefix(s, `"`)
}

func joinText(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "\n" + b
}
