package gateway

import (
	"maps"
	"slices"
	"strings"

	"github.com/keelrun/keel/internal/contract"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"
)

// chatAccumulator assembles a chat completion from its chunks. It is written out rather than
// taken from the SDK so that the argument text stays byte for byte what the model sent and every
// chunk's shape is checked on the way.
type chatAccumulator struct {
	text         strings.Builder
	refusal      strings.Builder
	calls        map[int64]*callBuilder
	finishReason string
	usage        contract.Usage
}

// callBuilder collects one tool call's pieces.
type callBuilder struct {
	id, name string
	args     strings.Builder
}

// add takes one chunk, passing its text on to onDelta.
func (a *chatAccumulator) add(c openai.ChatCompletionChunk, onDelta func(string)) error {
	if !c.JSON.Choices.Valid() {
		return schemaErr(ProviderOpenAI, "chunk without a choices array")
	}
	if bad(c.JSON.Usage) {
		return schemaErr(ProviderOpenAI, "usage is not an object")
	}
	if c.JSON.Usage.Valid() {
		a.usage = contract.Usage{
			InputTokens: c.Usage.PromptTokens, OutputTokens: c.Usage.CompletionTokens,
			CachedTokens: c.Usage.PromptTokensDetails.CachedTokens,
		}
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // only one choice is ever asked for
		}
		if err := a.addChoice(ch, onDelta); err != nil {
			return err
		}
	}
	return nil
}

// addChoice takes the delta of the first choice.
func (a *chatAccumulator) addChoice(ch openai.ChatCompletionChunkChoice, onDelta func(string)) error {
	if bad(ch.JSON.Delta) || bad(ch.JSON.FinishReason) {
		return schemaErr(ProviderOpenAI, "choice has a malformed delta or finish_reason")
	}
	d := ch.Delta
	if bad(d.JSON.Content) || bad(d.JSON.Refusal) || bad(d.JSON.ToolCalls) {
		return schemaErr(ProviderOpenAI, "delta has malformed content, refusal or tool_calls")
	}
	if d.Content != "" {
		a.text.WriteString(d.Content)
		if onDelta != nil {
			onDelta(d.Content)
		}
	}
	a.refusal.WriteString(d.Refusal)
	for _, tc := range d.ToolCalls {
		if bad(tc.JSON.Function) || bad(tc.JSON.Index) {
			return schemaErr(ProviderOpenAI, "tool call delta is malformed")
		}
		a.call(tc.Index).add(tc.ID, tc.Function.Name, tc.Function.Arguments)
	}
	if ch.FinishReason != "" {
		a.finishReason = ch.FinishReason
	}
	return nil
}

// call returns the builder of the tool call at index i.
func (a *chatAccumulator) call(i int64) *callBuilder {
	if a.calls == nil {
		a.calls = map[int64]*callBuilder{}
	}
	if a.calls[i] == nil {
		a.calls[i] = &callBuilder{}
	}
	return a.calls[i]
}

// add appends one piece of a tool call; the id and name arrive once, the arguments in pieces.
func (b *callBuilder) add(id, name, args string) {
	if id != "" {
		b.id = id
	}
	if name != "" {
		b.name = name
	}
	b.args.WriteString(args)
}

// finish checks the stream ended properly and builds the response. A refusal wins over a cut
// stream: either way nothing is retried, and the refusal says more.
func (a *chatAccumulator) finish(sawDone bool) (Response, error) {
	switch {
	case a.refusal.Len() > 0:
		return Response{}, &RefusalError{Provider: ProviderOpenAI, Reason: a.refusal.String()}
	case a.finishReason == "content_filter":
		return Response{}, &RefusalError{Provider: ProviderOpenAI, Reason: "finish_reason content_filter"}
	case a.finishReason == "" || !sawDone:
		return Response{}, &TruncatedError{Provider: ProviderOpenAI}
	}
	msg := contract.Message{Role: contract.RoleAssistant, Content: a.text.String()}
	for _, i := range slices.Sorted(maps.Keys(a.calls)) {
		b := a.calls[i]
		if b.id == "" || b.name == "" {
			return Response{}, schemaErr(ProviderOpenAI, "tool call without an id or a name")
		}
		msg.ToolCalls = append(msg.ToolCalls, contract.ToolCall{ID: b.id, Name: b.name, Arguments: b.args.String()})
	}
	return Response{Message: msg, Usage: a.usage, StopReason: a.finishReason}, nil
}

// bad reports a field that is present but not of the expected type.
func bad(f respjson.Field) bool {
	raw := f.Raw()
	return raw != "" && raw != respjson.Null && !f.Valid()
}

// schemaErr builds a SchemaError.
func schemaErr(provider, detail string) error {
	return &SchemaError{Provider: provider, Detail: detail}
}
