package gateway

import (
	"encoding/json"
	"fmt"

	"github.com/keelrun/keel/internal/contract"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// openaiMessages translates the transcript to chat-completions messages. With strict, the
// instruction to reply in the exact format goes last, as a system message, so it is the most
// recent thing the model reads.
func openaiMessages(msgs []contract.Message, strict bool) ([]openai.ChatCompletionMessageParamUnion, error) {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs)+1)
	for i, m := range msgs {
		p, err := openaiMessage(m)
		if err != nil {
			return nil, fmt.Errorf("translating message %d: %w", i, err)
		}
		out = append(out, p)
	}
	if strict {
		out = append(out, openai.SystemMessage(contract.StrictInstruction))
	}
	return out, nil
}

// openaiMessage translates one message.
func openaiMessage(m contract.Message) (openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case contract.RoleSystem:
		return openai.SystemMessage(m.Content), nil
	case contract.RoleUser:
		return openai.UserMessage(m.Content), nil
	case contract.RoleTool:
		return openai.ToolMessage(m.Content, m.ToolCallID), nil
	case contract.RoleAssistant:
		return openaiAssistant(m), nil
	default:
		return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", m.Role)
	}
}

// openaiAssistant translates an assistant message, sending tool call arguments as the exact
// text the model produced.
func openaiAssistant(m contract.Message) openai.ChatCompletionMessageParamUnion {
	var a openai.ChatCompletionAssistantMessageParam
	if m.Content != "" || len(m.ToolCalls) == 0 {
		a.Content.OfString = openai.String(m.Content)
	}
	for _, c := range m.ToolCalls {
		a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID:       c.ID,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.Arguments},
			},
		})
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
}

// openaiTools translates the tool specs to function tools.
func openaiTools(specs []contract.ToolSpec) ([]openai.ChatCompletionToolUnionParam, error) {
	out := make([]openai.ChatCompletionToolUnionParam, 0, len(specs))
	for _, s := range specs {
		params, err := schemaObject(s)
		if err != nil {
			return nil, err
		}
		def := shared.FunctionDefinitionParam{Name: s.Name, Parameters: shared.FunctionParameters(params)}
		if s.Description != "" {
			def.Description = openai.String(s.Description)
		}
		out = append(out, openai.ChatCompletionFunctionTool(def))
	}
	return out, nil
}

// schemaObject decodes a tool's JSON Schema; a tool without one takes no arguments.
func schemaObject(s contract.ToolSpec) (map[string]any, error) {
	if len(s.Parameters) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(s.Parameters, &m); err != nil || m == nil {
		return nil, fmt.Errorf("tool %q: parameters are not a JSON object: %v", s.Name, err)
	}
	return m, nil
}
