package gateway

import (
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/contract"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// responsesRequest is a transcript as the Responses API takes it.
type responsesRequest struct {
	instructions string
	items        responses.ResponseInputParam
}

// responsesInput translates the transcript. System messages become the instructions; an
// assistant message becomes its reasoning items (handed back exactly as the model sent them), its
// text, then one function_call item per tool call, the order the model produced them in; a tool
// message becomes a function_call_output item. With strict, the instruction to reply in the exact
// format goes last, as a developer message, so it is the most recent thing the model reads.
func responsesInput(msgs []contract.Message, strict bool) (responsesRequest, error) {
	var (
		r      responsesRequest
		system []string
	)
	for i, m := range msgs {
		switch m.Role {
		case contract.RoleSystem:
			if m.Content != "" {
				system = append(system, m.Content)
			}
		case contract.RoleUser:
			r.items = append(r.items, inputMessage(responses.EasyInputMessageRoleUser, m.Content))
		case contract.RoleAssistant:
			items, err := assistantItems(m)
			if err != nil {
				return responsesRequest{}, fmt.Errorf("translating message %d: %w", i, err)
			}
			r.items = append(r.items, items...)
		case contract.RoleTool:
			r.items = append(r.items, responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
				CallID: openai.String(m.ToolCallID),
				Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String(m.Content)},
			}})
		default:
			return responsesRequest{}, fmt.Errorf("translating message %d: unknown role %q", i, m.Role)
		}
	}
	r.instructions = strings.Join(system, "\n\n")
	if strict {
		r.items = append(r.items, inputMessage(responses.EasyInputMessageRoleDeveloper, contract.StrictInstruction))
	}
	return r, nil
}

// inputMessage is a message item with text content.
func inputMessage(role responses.EasyInputMessageRole, text string) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
		Type: responses.EasyInputMessageTypeMessage, Role: role,
		Content: responses.EasyInputMessageContentUnionParam{OfString: openai.String(text)},
	}}
}

// assistantItems translates an assistant message. Tool call arguments go as the exact text the
// model produced; reasoning items go as the JSON the model sent, which must be an object.
func assistantItems(m contract.Message) ([]responses.ResponseInputItemUnionParam, error) {
	var out []responses.ResponseInputItemUnionParam
	for i, raw := range m.Reasoning {
		if !isJSONObject(raw) {
			return nil, fmt.Errorf("reasoning item %d is not a JSON object", i)
		}
		item := param.Override[responses.ResponseReasoningItemParam](raw)
		out = append(out, responses.ResponseInputItemUnionParam{OfReasoning: &item})
	}
	if m.Content != "" || len(m.ToolCalls) == 0 {
		out = append(out, inputMessage(responses.EasyInputMessageRoleAssistant, m.Content))
	}
	for _, c := range m.ToolCalls {
		out = append(out, responses.ResponseInputItemUnionParam{OfFunctionCall: &responses.ResponseFunctionToolCallParam{
			CallID: c.ID, Name: c.Name, Arguments: c.Arguments,
		}})
	}
	return out, nil
}

// responsesTools translates the tool specs to function tools. Strict schema enforcement, on by
// default on this API, is switched off: Keel's tool schemas have optional fields, which strict
// mode does not allow, and argument problems are handled by Keel's own validation.
func responsesTools(specs []contract.ToolSpec) ([]responses.ToolUnionParam, error) {
	out := make([]responses.ToolUnionParam, 0, len(specs))
	for _, s := range specs {
		params, err := schemaObject(s)
		if err != nil {
			return nil, err
		}
		fn := &responses.FunctionToolParam{Name: s.Name, Parameters: params, Strict: openai.Bool(false)}
		if s.Description != "" {
			fn.Description = openai.String(s.Description)
		}
		out = append(out, responses.ToolUnionParam{OfFunction: fn})
	}
	return out, nil
}
