package gateway

import (
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/keelrun/keel/internal/contract"
)

// messageAccumulator assembles a Message from its stream events. It is written out rather than
// taken from the SDK (Message.Accumulate) because that helper replaces tool input that is not
// valid JSON with {}, and Keel needs the model's argument text exactly as sent.
type messageAccumulator struct {
	started, stopped bool
	blocks           []*blockBuilder
	stopReason       string
	usage            contract.Usage
}

// blockBuilder collects one content block.
type blockBuilder struct {
	kind     string // text, tool_use, or another type that is ignored
	id, name string
	text     strings.Builder
	input    strings.Builder
	// startInput is the input sent with content_block_start, used when no delta follows.
	startInput string
}

// add takes one event, passing text deltas on to onDelta.
func (a *messageAccumulator) add(ev anthropic.MessageStreamEventUnion, onDelta func(string)) error {
	switch ev.Type {
	case "message_start":
		a.started = true
		u := ev.Message.Usage
		a.usage = contract.Usage{
			InputTokens:      u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
			OutputTokens:     u.OutputTokens,
			CachedTokens:     u.CacheReadInputTokens,
			CacheWriteTokens: u.CacheCreationInputTokens,
		}
		return nil
	case "":
		return schemaErr(ProviderAnthropic, "event without a type")
	case "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop":
		if !a.started {
			return schemaErr(ProviderAnthropic, ev.Type+" before message_start")
		}
	default:
		return nil // an event type newer than this client; nothing Keel needs
	}
	switch ev.Type {
	case "content_block_start":
		return a.start(ev)
	case "content_block_delta":
		return a.delta(ev, onDelta)
	case "content_block_stop":
		_, err := a.block(ev)
		return err
	case "message_delta":
		a.messageDelta(ev)
	case "message_stop":
		a.stopped = true
	}
	return nil
}

// start opens the next content block; blocks arrive in index order.
func (a *messageAccumulator) start(ev anthropic.MessageStreamEventUnion) error {
	if ev.Index != int64(len(a.blocks)) {
		return schemaErr(ProviderAnthropic, fmt.Sprintf("content block %d started out of order", ev.Index))
	}
	cb := ev.ContentBlock
	b := &blockBuilder{kind: cb.Type, id: cb.ID, name: cb.Name, startInput: cb.JSON.Input.Raw()}
	b.text.WriteString(cb.Text)
	a.blocks = append(a.blocks, b)
	return nil
}

// delta appends a text or input delta to its block.
func (a *messageAccumulator) delta(ev anthropic.MessageStreamEventUnion, onDelta func(string)) error {
	b, err := a.block(ev)
	if err != nil {
		return err
	}
	switch ev.Delta.Type {
	case "text_delta":
		b.text.WriteString(ev.Delta.Text)
		if ev.Delta.Text != "" && onDelta != nil {
			onDelta(ev.Delta.Text)
		}
	case "input_json_delta":
		b.input.WriteString(ev.Delta.PartialJSON)
	}
	return nil
}

// block returns the open block an event addresses.
func (a *messageAccumulator) block(ev anthropic.MessageStreamEventUnion) (*blockBuilder, error) {
	if ev.Index < 0 || ev.Index >= int64(len(a.blocks)) {
		return nil, schemaErr(ProviderAnthropic, fmt.Sprintf("%s for content block %d that never started", ev.Type, ev.Index))
	}
	return a.blocks[ev.Index], nil
}

// messageDelta records the stop reason and the usage, whose counts are cumulative totals.
func (a *messageAccumulator) messageDelta(ev anthropic.MessageStreamEventUnion) {
	a.stopReason = string(ev.Delta.StopReason)
	u := ev.Usage
	a.usage.OutputTokens = u.OutputTokens
	if u.JSON.InputTokens.Valid() {
		a.usage.InputTokens = u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
		a.usage.CachedTokens, a.usage.CacheWriteTokens = u.CacheReadInputTokens, u.CacheCreationInputTokens
	}
}

// finish checks the stream ended properly and builds the response. A refusal wins over a cut
// stream: either way nothing is retried, and the refusal says more.
func (a *messageAccumulator) finish() (Response, error) {
	switch {
	case a.stopReason == string(anthropic.StopReasonRefusal):
		return Response{}, &RefusalError{Provider: ProviderAnthropic, Reason: "stop_reason refusal"}
	case !a.stopped:
		return Response{}, &TruncatedError{Provider: ProviderAnthropic}
	}
	msg := contract.Message{Role: contract.RoleAssistant}
	var text strings.Builder
	for _, b := range a.blocks {
		switch b.kind {
		case "text":
			text.WriteString(b.text.String())
		case "tool_use":
			if b.id == "" || b.name == "" {
				return Response{}, schemaErr(ProviderAnthropic, "tool_use block without an id or a name")
			}
			msg.ToolCalls = append(msg.ToolCalls, contract.ToolCall{ID: b.id, Name: b.name, Arguments: b.arguments()})
		}
	}
	msg.Content = text.String()
	return Response{Message: msg, Usage: a.usage, StopReason: a.stopReason}, nil
}

// arguments is the streamed input text, or the input sent with the block's start when no
// delta followed (a tool called without arguments).
func (b *blockBuilder) arguments() string {
	if b.input.Len() > 0 {
		return b.input.String()
	}
	if b.startInput == "" || b.startInput == "null" {
		return "{}"
	}
	return b.startInput
}
