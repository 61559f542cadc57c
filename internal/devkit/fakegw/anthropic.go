package fakegw

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/keelrun/keel/internal/contract"
)

// anthropic speaks the Messages API wire format (POST /v1/messages).
type anthropic struct{}

func (anthropic) name() string                          { return contract.ProviderAnthropic }
func (anthropic) routes() []string                      { return []string{"POST /v1/messages"} }
func (anthropic) parse(body []byte) (transcript, error) { return parseAnthropic(body) }

// stopReason is the Messages API stop_reason of a reply.
func (r reply) stopReason() string {
	switch {
	case r.Refusal != "":
		return "refusal"
	case len(r.Calls) > 0:
		return "tool_use"
	}
	return "end_turn"
}

func (p plan) anUsage(output int) map[string]int {
	return map[string]int{
		"input_tokens": p.InputTokens - p.Cache.Read - p.Cache.Write, "output_tokens": output,
		"cache_read_input_tokens": p.Cache.Read, "cache_creation_input_tokens": p.Cache.Write,
	}
}

// streamReply writes message_start, a ping, a text block, one tool_use block per call (its input
// as input_json_delta fragments), message_delta with the stop reason and usage, and message_stop.
func (a anthropic) streamReply(s *stream, p plan) error {
	start := map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_" + p.ID[:24], "type": "message", "role": "assistant", "model": p.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": p.anUsage(1),
	}}
	if err := s.event("message_start", start); err != nil {
		return err
	}
	if err := s.event("ping", map[string]string{"type": "ping"}); err != nil {
		return err
	}
	index := 0
	if pieces := p.textPieces(); len(pieces) > 0 {
		if err := a.streamText(s, index, pieces); err != nil {
			return err
		}
		if p.CutAfterText {
			return nil
		}
		if err := blockStop(s, index); err != nil {
			return err
		}
		index++
	}
	for i, c := range p.Reply.Calls {
		if err := a.streamToolUse(s, index, p.callID("toolu_", i), c); err != nil {
			return err
		}
		index++
	}
	delta := map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": p.Reply.stopReason(), "stop_sequence": nil},
		"usage": p.anUsage(p.OutputTokens)}
	if err := s.event("message_delta", delta); err != nil {
		return err
	}
	return s.event("message_stop", map[string]string{"type": "message_stop"})
}

// streamText writes a text block's start and its text_delta events, not its stop.
func (anthropic) streamText(s *stream, index int, pieces []piece) error {
	start := map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}}
	if err := s.event("content_block_start", start); err != nil {
		return err
	}
	for _, pc := range pieces {
		if err := s.pause(pc.Wait); err != nil {
			return err
		}
		d := map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]string{"type": "text_delta", "text": pc.Text}}
		if err := s.event("content_block_delta", d); err != nil {
			return err
		}
		s.shown(pc.Text)
	}
	return nil
}

// streamToolUse writes one tool_use block with an empty input and then its argument fragments.
func (anthropic) streamToolUse(s *stream, index int, id string, c call) error {
	start := map[string]any{"type": "content_block_start", "index": index,
		"content_block": map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": map[string]any{}}}
	if err := s.event("content_block_start", start); err != nil {
		return err
	}
	for _, frag := range splitRunes(c.Args, 3) {
		d := map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]string{"type": "input_json_delta", "partial_json": frag}}
		if err := s.event("content_block_delta", d); err != nil {
			return err
		}
	}
	return blockStop(s, index)
}

func blockStop(s *stream, index int) error {
	return s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
}

// streamMalformed writes a message_start event whose JSON never closes.
func (anthropic) streamMalformed(s *stream, p plan) error {
	return s.raw("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_%s","content":[`, p.ID[:24]))
}

// writeError writes {"type":"error","error":{"type","message"},"request_id"}.
func (anthropic) writeError(w http.ResponseWriter, status int, e errorBody) {
	if e.Raw != "" {
		writeBody(w, status, []byte(e.Raw))
		return
	}
	if e.AnthropicStatus != 0 {
		status = e.AnthropicStatus
	}
	body := map[string]any{"type": "error", "error": map[string]string{"type": e.AnthropicType, "message": e.AnthropicMessage}, "request_id": "req_fakegw"}
	b, _ := json.Marshal(body)
	writeBody(w, status, b)
}

// writeJSON answers a non-streaming request with a whole message object.
func (anthropic) writeJSON(w http.ResponseWriter, p plan) error {
	content := []any{}
	if p.Reply.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": p.Reply.Text})
	}
	for i, c := range p.Reply.Calls {
		var input any = json.RawMessage(c.Args)
		if !json.Valid([]byte(c.Args)) {
			input = c.Args
		}
		content = append(content, map[string]any{"type": "tool_use", "id": p.callID("toolu_", i), "name": c.Name, "input": input})
	}
	body := map[string]any{"id": "msg_" + p.ID[:24], "type": "message", "role": "assistant", "model": p.Model,
		"content": content, "stop_reason": p.Reply.stopReason(), "stop_sequence": nil, "usage": p.anUsage(p.OutputTokens)}
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encoding message: %w", err)
	}
	writeBody(w, http.StatusOK, b)
	return nil
}
