package fakegw

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// responsesAPI speaks OpenAI's Responses API wire format (POST /v1/responses). Every reply starts
// with a reasoning item whose encrypted_content (sent when the request includes
// reasoning.encrypted_content) only this fake can make; a later request that hands it back
// altered, without its encrypted content, or without the item that followed it is refused as the
// real API refuses it, and Record.Reasoning counts the items handed back intact.
type responsesAPI struct{}

// FormatResponses is Record.Format of a request in the Responses wire format.
const FormatResponses = contract.ProviderOpenAIResponses

func (responsesAPI) name() string                          { return FormatResponses }
func (responsesAPI) routes() []string                      { return []string{"POST /v1/responses", "POST /responses"} }
func (responsesAPI) parse(body []byte) (transcript, error) { return parseResponses(body) }

// writeError writes the same error body as chat completions.
func (responsesAPI) writeError(w http.ResponseWriter, status int, e errorBody) {
	openAI{}.writeError(w, status, e)
}

// rsWriter numbers the events of one Responses stream.
type rsWriter struct {
	s   *stream
	seq int
}

// event writes one event named by its type.
func (w *rsWriter) event(typ string, fields map[string]any) error {
	fields["type"], fields["sequence_number"] = typ, w.seq
	w.seq++
	return w.s.event(typ, fields)
}

// response is the response object of a plan with a status, its output items and, once the
// response is complete, its usage.
func (p plan) response(status string, output []any, usage bool) map[string]any {
	r := map[string]any{
		"id": "resp_" + p.ID[:24], "object": "response", "created_at": time.Now().Unix(), "status": status,
		"model": p.Model, "output": output, "error": nil, "incomplete_details": nil, "store": false, "usage": nil,
	}
	if usage {
		r["usage"] = map[string]any{
			"input_tokens": p.InputTokens, "input_tokens_details": map[string]int{"cached_tokens": p.Cache.Read},
			"output_tokens": p.OutputTokens, "output_tokens_details": map[string]int{"reasoning_tokens": tokens(len(reasoningSummary))},
			"total_tokens": p.InputTokens + p.OutputTokens,
		}
	}
	return r
}

// reasoningSummary is the summary of every reasoning item the fake sends.
const reasoningSummary = "Deciding the next step from the task and the tool results so far."

// reasoningItem is the plan's reasoning item as response.output_item.done carries it.
func (p plan) reasoningItem() map[string]any {
	id := "rs_" + p.ID[:24]
	item := map[string]any{"id": id, "type": "reasoning", "encrypted_content": nil,
		"summary": []any{map[string]string{"type": "summary_text", "text": reasoningSummary}}}
	if p.EncryptedReasoning {
		item["encrypted_content"] = sealReasoning(id)
	}
	return item
}

// messageItem is an assistant message item holding text or a refusal.
func (p plan) messageItem(status, text, refusal string) map[string]any {
	part := map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
	if refusal != "" {
		part = map[string]any{"type": "refusal", "refusal": refusal}
	}
	return map[string]any{"id": "msg_" + p.ID[:24], "type": "message", "role": "assistant", "status": status, "content": []any{part}}
}

// callItem is the i-th function call item.
func (p plan) callItem(i int, c call, status, args string) map[string]any {
	return map[string]any{"id": p.callID("fc_", i), "type": "function_call", "status": status,
		"call_id": p.callID("call_", i), "name": c.Name, "arguments": args}
}

// streamReply writes response.created, the reasoning item, a message item with its text deltas
// (or refusal deltas), one function_call item per call with argument fragments, and
// response.completed with the usage.
func (r responsesAPI) streamReply(s *stream, p plan) error {
	w := &rsWriter{s: s}
	if err := w.event("response.created", map[string]any{"response": p.response("in_progress", []any{}, false)}); err != nil {
		return err
	}
	var output []any
	reasoning := p.reasoningItem()
	if err := r.item(w, 0, map[string]any{"id": reasoning["id"], "type": "reasoning", "summary": []any{}}, reasoning); err != nil {
		return err
	}
	output = append(output, reasoning)
	if pieces := p.textPieces(); len(pieces) > 0 || p.Reply.Refusal != "" {
		msg, err := r.streamMessage(w, len(output), p, pieces)
		if err != nil || msg == nil {
			return err // a nil item: the stream is to be cut after the text
		}
		output = append(output, msg)
	}
	for i, c := range p.Reply.Calls {
		item, err := r.streamCall(w, len(output), p, i, c)
		if err != nil {
			return err
		}
		output = append(output, item)
	}
	return w.event("response.completed", map[string]any{"response": p.response("completed", output, true)})
}

// item writes an output item's added and done events.
func (responsesAPI) item(w *rsWriter, index int, added, done map[string]any) error {
	if err := w.event("response.output_item.added", map[string]any{"output_index": index, "item": added}); err != nil {
		return err
	}
	return w.event("response.output_item.done", map[string]any{"output_index": index, "item": done})
}

// streamMessage writes a message item's text or refusal deltas between its added and done events,
// and returns the done item; nil when the plan cuts the stream after the text.
func (responsesAPI) streamMessage(w *rsWriter, index int, p plan, pieces []piece) (map[string]any, error) {
	id := "msg_" + p.ID[:24]
	added := map[string]any{"id": id, "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}
	if err := w.event("response.output_item.added", map[string]any{"output_index": index, "item": added}); err != nil {
		return nil, err
	}
	at := map[string]any{"output_index": index, "item_id": id, "content_index": 0}
	with := func(k string, v any) map[string]any {
		m := map[string]any{k: v}
		for key, val := range at {
			m[key] = val
		}
		return m
	}
	text := ""
	for _, pc := range pieces {
		if err := w.s.pause(pc.Wait); err != nil {
			return nil, err
		}
		if err := w.event("response.output_text.delta", with("delta", pc.Text)); err != nil {
			return nil, err
		}
		w.s.shown(pc.Text)
		text += pc.Text
	}
	if p.CutAfterText {
		return nil, nil
	}
	for _, part := range splitWords(p.Reply.Refusal, 2) {
		if err := w.event("response.refusal.delta", with("delta", part)); err != nil {
			return nil, err
		}
		w.s.shown(part)
	}
	done := p.messageItem("completed", text, p.Reply.Refusal)
	return done, w.event("response.output_item.done", map[string]any{"output_index": index, "item": done})
}

// streamCall writes one function_call item with its arguments in fragments.
func (responsesAPI) streamCall(w *rsWriter, index int, p plan, i int, c call) (map[string]any, error) {
	if err := w.event("response.output_item.added", map[string]any{"output_index": index, "item": p.callItem(i, c, "in_progress", "")}); err != nil {
		return nil, err
	}
	id := p.callID("fc_", i)
	for _, frag := range splitRunes(c.Args, 3) {
		if err := w.event("response.function_call_arguments.delta", map[string]any{"output_index": index, "item_id": id, "delta": frag}); err != nil {
			return nil, err
		}
	}
	if err := w.event("response.function_call_arguments.done", map[string]any{"output_index": index, "item_id": id, "arguments": c.Args}); err != nil {
		return nil, err
	}
	done := p.callItem(i, c, "completed", c.Args)
	return done, w.event("response.output_item.done", map[string]any{"output_index": index, "item": done})
}

// streamMalformed writes response.created, then an event whose JSON never closes.
func (responsesAPI) streamMalformed(s *stream, p plan) error {
	w := &rsWriter{s: s}
	if err := w.event("response.created", map[string]any{"response": p.response("in_progress", []any{}, false)}); err != nil {
		return err
	}
	return s.raw("response.output_item.added", `{"type":"response.output_item.added","output_index":0,"item":{"type":"message","content":[`)
}

// writeJSON answers a non-streaming request with a whole response object.
func (responsesAPI) writeJSON(w http.ResponseWriter, p plan) error {
	output := []any{p.reasoningItem()}
	if p.Reply.Text != "" || p.Reply.Refusal != "" {
		output = append(output, p.messageItem("completed", p.Reply.Text, p.Reply.Refusal))
	}
	for i, c := range p.Reply.Calls {
		output = append(output, p.callItem(i, c, "completed", c.Args))
	}
	b, err := json.Marshal(p.response("completed", output, true))
	if err != nil {
		return fmt.Errorf("encoding response: %w", err)
	}
	writeBody(w, http.StatusOK, b)
	return nil
}
