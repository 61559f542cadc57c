package fakegw

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// responsesRequest is the part of a Responses API request the fake reads.
type responsesRequest struct {
	Model        string          `json:"model"`
	Instructions string          `json:"instructions"`
	Input        json.RawMessage `json:"input"`
	Stream       bool            `json:"stream"`
	Include      []string        `json:"include"`
}

// responsesItem is one input item.
type responsesItem struct {
	Type             string          `json:"type"`
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ID               string          `json:"id"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Arguments        string          `json:"arguments"`
	Output           json.RawMessage `json:"output"`
	EncryptedContent *string         `json:"encrypted_content"`
}

// reasoningKey seals the fake's reasoning items: only the fake can make an encrypted_content that
// verifies, as only OpenAI can make its own.
var reasoningKey = []byte("keel fake gateway reasoning")

// sealReasoning is the encrypted_content of the reasoning item id.
func sealReasoning(id string) string {
	m := hmac.New(sha256.New, reasoningKey)
	m.Write([]byte(id))
	return "fake-enc:" + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// parseResponses reads a Responses API request body. The usage of every stream is included (the
// API always reports it). Reasoning items must come back as the fake sent them: sealed, and
// followed by the message or function call they preceded.
func parseResponses(body []byte) (transcript, error) {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return transcript{}, fmt.Errorf("parsing responses request: %w", err)
	}
	t := transcript{Model: req.Model, Stream: req.Stream, IncludeUsage: true, System: req.Instructions}
	for _, inc := range req.Include {
		t.EncryptedReasoning = t.EncryptedReasoning || inc == "reasoning.encrypted_content"
	}
	if isJSONString(req.Input) {
		text, err := contentText(req.Input)
		t.Messages = append(t.Messages, message{Role: "user", Text: text})
		return t, err
	}
	var items []responsesItem
	if len(req.Input) > 0 {
		if err := json.Unmarshal(req.Input, &items); err != nil {
			return transcript{}, fmt.Errorf("parsing input items: %w", err)
		}
	}
	for i, it := range items {
		if err := t.addItem(it, items[i+1:]); err != nil {
			return transcript{}, fmt.Errorf("input item %d: %w", i, err)
		}
	}
	return t, nil
}

// addItem adds one input item. An assistant's reasoning, text and function calls arrive as
// separate items, in that order, and become one assistant message.
func (t *transcript) addItem(it responsesItem, rest []responsesItem) error {
	kind := it.Type
	if kind == "" && it.Role != "" {
		kind = "message"
	}
	switch kind {
	case "message":
		return t.addMessageItem(it)
	case "reasoning":
		if it.EncryptedContent == nil || *it.EncryptedContent == "" {
			return fmt.Errorf("item with id %q not found: items are not persisted when store is false; send its encrypted_content", it.ID)
		}
		if *it.EncryptedContent != sealReasoning(it.ID) {
			return fmt.Errorf("the encrypted content of item %q could not be verified", it.ID)
		}
		if len(rest) == 0 || !(rest[0].Type == "function_call" || rest[0].Type == "reasoning" || rest[0].Role == "assistant") {
			return fmt.Errorf("item %q of type reasoning was provided without its required following item", it.ID)
		}
		t.Reasoning++
		if n := len(t.Messages); n == 0 || t.Messages[n-1].Role != "assistant" || t.Messages[n-1].Text != "" || len(t.Messages[n-1].Calls) > 0 {
			t.Messages = append(t.Messages, message{Role: "assistant"})
		}
	case "function_call":
		if n := len(t.Messages); n > 0 && t.Messages[n-1].Role == "assistant" {
			t.Messages[n-1].Calls = append(t.Messages[n-1].Calls, call{ID: it.CallID, Name: it.Name, Args: it.Arguments})
		} else {
			t.Messages = append(t.Messages, message{Role: "assistant", Calls: []call{{ID: it.CallID, Name: it.Name, Args: it.Arguments}}})
		}
	case "function_call_output":
		text, err := contentText(it.Output)
		if err != nil {
			return fmt.Errorf("parsing function call output: %w", err)
		}
		t.Messages = append(t.Messages, message{Role: "tool", Text: text, CallID: it.CallID})
	default:
		return fmt.Errorf("unsupported input item type %q", it.Type)
	}
	return nil
}

// addMessageItem adds a message item; an assistant's text joins the reasoning item before it.
func (t *transcript) addMessageItem(it responsesItem) error {
	text, err := contentText(it.Content)
	if err != nil {
		return fmt.Errorf("parsing %s message content: %w", it.Role, err)
	}
	switch it.Role {
	case "system", "developer":
		t.System = joinText(t.System, text)
	case "user":
		t.Messages = append(t.Messages, message{Role: "user", Text: text})
	case "assistant":
		if n := len(t.Messages); n > 0 && t.Messages[n-1].Role == "assistant" && t.Messages[n-1].Text == "" && len(t.Messages[n-1].Calls) == 0 {
			t.Messages[n-1].Text = text
			return nil
		}
		t.Messages = append(t.Messages, message{Role: "assistant", Text: text})
	default:
		return fmt.Errorf("unknown message role %q", it.Role)
	}
	return nil
}
