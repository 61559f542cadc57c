package gateway

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/keelrun/keel/internal/contract"
	"github.com/openai/openai-go/v3/responses"
)

// responseAccumulator assembles a reply from a Responses event stream. It is written out rather
// than taken from the SDK (responses.ResponseAccumulator) for the same reasons as the others: the
// argument text must stay byte for byte what the model sent, every event's shape is checked, and
// the reasoning items must be kept exactly as sent so they can be handed back.
type responseAccumulator struct {
	started, ended bool
	// items are the output items by output_index, in the order they were added.
	items   []*outputItem
	refusal strings.Builder
	status  string
	reason  string // incomplete_details.reason of an incomplete response
	usage   contract.Usage
}

// outputItem collects one output item: a message, a function call, a reasoning item, or a type
// Keel does not use.
type outputItem struct {
	kind string
	text strings.Builder
	call callBuilder
	// raw is the reasoning item's JSON from response.output_item.done.
	raw json.RawMessage
}

// Event types of the Responses stream that Keel reads.
const (
	evCreated        = "response.created"
	evInProgress     = "response.in_progress"
	evItemAdded      = "response.output_item.added"
	evItemDone       = "response.output_item.done"
	evTextDelta      = "response.output_text.delta"
	evRefusalDelta   = "response.refusal.delta"
	evArgsDelta      = "response.function_call_arguments.delta"
	evArgsDone       = "response.function_call_arguments.done"
	evCompleted      = "response.completed"
	evIncomplete     = "response.incomplete"
	evFailed         = "response.failed"
	evError          = "error"
	itemMessage      = "message"
	itemFunctionCall = "function_call"
	itemReasoning    = "reasoning"
)

// add takes one event, passing text deltas on to onDelta. A failure the stream reports (an error
// event or response.failed) ends the stream as an EventError.
func (a *responseAccumulator) add(ev responses.ResponseStreamEventUnion, onDelta func(string)) error {
	switch ev.Type {
	case "":
		return schemaErr(ProviderOpenAIResponses, "event without a type")
	case evError:
		a.ended = true
		return &EventError{Provider: ProviderOpenAIResponses, Event: ev.Type, Code: ev.Code, Message: ev.Message}
	case evCreated, evInProgress:
		a.started = true
		return nil
	case evItemAdded, evItemDone, evTextDelta, evRefusalDelta, evArgsDelta, evArgsDone, evCompleted, evIncomplete, evFailed:
		if !a.started {
			return schemaErr(ProviderOpenAIResponses, ev.Type+" before "+evCreated)
		}
	default:
		return nil // reasoning summaries, content parts and newer events: nothing Keel needs
	}
	switch ev.Type {
	case evItemAdded:
		return a.itemAdded(ev)
	case evItemDone:
		return a.itemDone(ev)
	case evTextDelta, evRefusalDelta, evArgsDelta, evArgsDone:
		return a.delta(ev, onDelta)
	default:
		return a.end(ev)
	}
}

// itemAdded opens the next output item; items arrive in output_index order.
func (a *responseAccumulator) itemAdded(ev responses.ResponseStreamEventUnion) error {
	if ev.OutputIndex != int64(len(a.items)) {
		return schemaErr(ProviderOpenAIResponses, fmt.Sprintf("output item %d added out of order", ev.OutputIndex))
	}
	it := &outputItem{kind: ev.Item.Type}
	if it.kind == itemFunctionCall {
		it.call.add(ev.Item.CallID, ev.Item.Name, "")
	}
	a.items = append(a.items, it)
	return nil
}

// item returns the open item an event addresses.
func (a *responseAccumulator) item(ev responses.ResponseStreamEventUnion) (*outputItem, error) {
	if ev.OutputIndex < 0 || ev.OutputIndex >= int64(len(a.items)) {
		return nil, schemaErr(ProviderOpenAIResponses, fmt.Sprintf("%s for output item %d that was never added", ev.Type, ev.OutputIndex))
	}
	return a.items[ev.OutputIndex], nil
}

// delta appends a text, refusal or argument delta to its item. The arguments' done event carries
// the whole text, used when no delta came.
func (a *responseAccumulator) delta(ev responses.ResponseStreamEventUnion, onDelta func(string)) error {
	it, err := a.item(ev)
	if err != nil {
		return err
	}
	want := itemMessage
	if ev.Type == evArgsDelta || ev.Type == evArgsDone {
		want = itemFunctionCall
	}
	if it.kind != want {
		return schemaErr(ProviderOpenAIResponses, fmt.Sprintf("%s for output item %d, which is a %q item", ev.Type, ev.OutputIndex, it.kind))
	}
	switch ev.Type {
	case evTextDelta:
		it.text.WriteString(ev.Delta)
		if ev.Delta != "" && onDelta != nil {
			onDelta(ev.Delta)
		}
	case evRefusalDelta:
		a.refusal.WriteString(ev.Delta)
	case evArgsDelta:
		it.call.add("", "", ev.Delta)
	case evArgsDone:
		if it.call.args.Len() == 0 {
			it.call.add("", "", ev.Arguments)
		}
	}
	return nil
}

// itemDone completes an item from its final form: the reasoning item is kept whole (only the done
// event's encrypted_content is complete), and a function call or message whose content came
// without deltas takes it from here.
func (a *responseAccumulator) itemDone(ev responses.ResponseStreamEventUnion) error {
	it, err := a.item(ev)
	if err != nil {
		return err
	}
	done := ev.Item
	if done.Type != it.kind {
		return schemaErr(ProviderOpenAIResponses, fmt.Sprintf("output item %d was added as %q and done as %q", ev.OutputIndex, it.kind, done.Type))
	}
	switch it.kind {
	case itemReasoning:
		raw := json.RawMessage(done.RawJSON())
		if !isJSONObject(raw) {
			return schemaErr(ProviderOpenAIResponses, "reasoning item is not a JSON object")
		}
		it.raw = raw
	case itemFunctionCall:
		if bad(done.JSON.Arguments) {
			return schemaErr(ProviderOpenAIResponses, "function call arguments are not text")
		}
		it.call.add(done.CallID, done.Name, "")
		if it.call.args.Len() == 0 {
			it.call.add("", "", done.Arguments.OfString)
		}
	case itemMessage:
		for _, c := range done.Content {
			switch {
			case c.Type == "refusal" && a.refusal.Len() == 0:
				a.refusal.WriteString(c.Refusal)
			case c.Type == "output_text" && it.text.Len() == 0:
				it.text.WriteString(c.Text)
			}
		}
	}
	return nil
}

// end records the event that ends the response: its status, usage, and why it stopped short or
// failed.
func (a *responseAccumulator) end(ev responses.ResponseStreamEventUnion) error {
	a.ended = true
	r := ev.Response
	if bad(r.JSON.Usage) {
		return schemaErr(ProviderOpenAIResponses, "usage is not an object")
	}
	if r.JSON.Usage.Valid() {
		a.usage = contract.Usage{
			InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens,
			CachedTokens: r.Usage.InputTokensDetails.CachedTokens,
		}
	}
	a.status = string(r.Status)
	switch ev.Type {
	case evIncomplete:
		a.reason = r.IncompleteDetails.Reason
	case evFailed:
		code, msg := string(r.Error.Code), r.Error.Message
		if code == "" && msg == "" {
			msg = "the response failed without an error"
		}
		return &EventError{Provider: ProviderOpenAIResponses, Event: ev.Type, Code: code, Message: msg}
	}
	return nil
}

// finish checks the stream ended properly and builds the response. A refusal wins over a cut
// stream: either way nothing is retried, and the refusal says more. A response cut short by
// max_output_tokens is returned with what it holds, as a chat completion that stopped for length
// is; the caller decides from its content.
func (a *responseAccumulator) finish() (Response, error) {
	switch {
	case a.refusal.Len() > 0:
		return Response{}, &RefusalError{Provider: ProviderOpenAIResponses, Reason: a.refusal.String()}
	case a.reason == "content_filter":
		return Response{}, &RefusalError{Provider: ProviderOpenAIResponses, Reason: "incomplete: content_filter"}
	case !a.ended:
		return Response{}, &TruncatedError{Provider: ProviderOpenAIResponses}
	}
	msg := contract.Message{Role: contract.RoleAssistant}
	var text strings.Builder
	for i, it := range a.items {
		switch it.kind {
		case itemMessage:
			text.WriteString(it.text.String())
		case itemReasoning:
			if it.raw == nil {
				return Response{}, schemaErr(ProviderOpenAIResponses, fmt.Sprintf("reasoning item %d never completed", i))
			}
			msg.Reasoning = append(msg.Reasoning, it.raw)
		case itemFunctionCall:
			b := &it.call
			if b.id == "" || b.name == "" {
				return Response{}, schemaErr(ProviderOpenAIResponses, "function call without a call_id or a name")
			}
			msg.ToolCalls = append(msg.ToolCalls, contract.ToolCall{ID: b.id, Name: b.name, Arguments: b.args.String()})
		}
	}
	msg.Content = text.String()
	stop := a.status
	if a.reason != "" {
		stop = a.reason
	}
	return Response{Message: msg, Usage: a.usage, StopReason: stop}, nil
}
