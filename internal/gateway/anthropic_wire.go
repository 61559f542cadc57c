package gateway

import (
	"encoding/json"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/keelrun/keel/internal/contract"
)

// anthropicTurns collects the system text and the alternating turns of a Messages request.
type anthropicTurns struct {
	system []anthropic.TextBlockParam
	turns  []turn
}

// turn is one user or assistant turn while it is being built.
type turn struct {
	role   string
	blocks []anthropic.ContentBlockParamUnion
}

// params returns the turns as message parameters.
func (t anthropicTurns) params() []anthropic.MessageParam {
	out := make([]anthropic.MessageParam, 0, len(t.turns))
	for _, tn := range t.turns {
		if tn.role == contract.RoleAssistant {
			out = append(out, anthropic.NewAssistantMessage(tn.blocks...))
		} else {
			out = append(out, anthropic.NewUserMessage(tn.blocks...))
		}
	}
	return out
}

// anthropicMessages translates the transcript. System messages go to the system parameter;
// tool results become tool_result blocks of a user turn, merged with whatever user content
// follows, because the API wants every result of an assistant turn in the next user turn. With
// strict, the instruction to reply in the exact format is appended to the system parameter.
func anthropicMessages(msgs []contract.Message, strict bool) (anthropicTurns, error) {
	var t anthropicTurns
	for i, m := range msgs {
		if err := t.add(m); err != nil {
			return anthropicTurns{}, fmt.Errorf("translating message %d: %w", i, err)
		}
	}
	if strict {
		t.system = append(t.system, anthropic.TextBlockParam{Text: contract.StrictInstruction})
	}
	return t, nil
}

// add translates one message. Empty text is left out: the API refuses empty text blocks.
func (t *anthropicTurns) add(m contract.Message) error {
	switch m.Role {
	case contract.RoleSystem:
		if m.Content != "" {
			t.system = append(t.system, anthropic.TextBlockParam{Text: m.Content})
		}
	case contract.RoleUser:
		if m.Content != "" {
			t.append(contract.RoleUser, anthropic.NewTextBlock(m.Content))
		}
	case contract.RoleTool:
		t.append(contract.RoleUser, toolResult(m))
	case contract.RoleAssistant:
		t.append(contract.RoleAssistant, assistantBlocks(m)...)
	default:
		return fmt.Errorf("unknown role %q", m.Role)
	}
	return nil
}

// append adds blocks to the last turn if it has the same role, or starts a new turn.
func (t *anthropicTurns) append(role string, blocks ...anthropic.ContentBlockParamUnion) {
	if len(blocks) == 0 {
		return
	}
	if n := len(t.turns); n > 0 && t.turns[n-1].role == role {
		t.turns[n-1].blocks = append(t.turns[n-1].blocks, blocks...)
		return
	}
	t.turns = append(t.turns, turn{role: role, blocks: blocks})
}

// toolResult translates a tool message, passing on whether it reports a failure.
func toolResult(m contract.Message) anthropic.ContentBlockParamUnion {
	if m.Content != "" {
		return anthropic.NewToolResultBlock(m.ToolCallID, m.Content, m.IsError)
	}
	return anthropic.ContentBlockParamUnion{OfToolResult: &anthropic.ToolResultBlockParam{
		ToolUseID: m.ToolCallID, IsError: anthropic.Bool(m.IsError),
	}}
}

// assistantBlocks translates an assistant message. The API takes tool input as a JSON object;
// arguments that are not one (a malformed call the model is being told about) are sent as {}.
func assistantBlocks(m contract.Message) []anthropic.ContentBlockParamUnion {
	var blocks []anthropic.ContentBlockParamUnion
	if m.Content != "" {
		blocks = append(blocks, anthropic.NewTextBlock(m.Content))
	}
	for _, c := range m.ToolCalls {
		input := json.RawMessage(c.Arguments)
		if !isJSONObject(input) {
			input = json.RawMessage(`{}`)
		}
		blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, input, c.Name))
	}
	return blocks
}

// isJSONObject reports whether b is one JSON object.
func isJSONObject(b []byte) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil
}

// anthropicTools translates the tool specs; the schema's properties and required list go to
// their fields and every other keyword travels as an extra field.
func anthropicTools(specs []contract.ToolSpec) ([]anthropic.ToolUnionParam, error) {
	out := make([]anthropic.ToolUnionParam, 0, len(specs))
	for _, s := range specs {
		schema, err := schemaObject(s)
		if err != nil {
			return nil, err
		}
		tool := &anthropic.ToolParam{Name: s.Name, InputSchema: inputSchema(schema)}
		if s.Description != "" {
			tool.Description = anthropic.String(s.Description)
		}
		out = append(out, anthropic.ToolUnionParam{OfTool: tool})
	}
	return out, nil
}

// inputSchema splits a decoded JSON Schema object into the SDK's input schema fields.
func inputSchema(schema map[string]any) anthropic.ToolInputSchemaParam {
	in := anthropic.ToolInputSchemaParam{Properties: schema["properties"]}
	if in.Properties == nil {
		in.Properties = map[string]any{}
	}
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				in.Required = append(in.Required, s)
			}
		}
	}
	for k, v := range schema {
		if k == "type" || k == "properties" || k == "required" {
			continue
		}
		if in.ExtraFields == nil {
			in.ExtraFields = map[string]any{}
		}
		in.ExtraFields[k] = v
	}
	return in
}
