package fakegw

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"sync"

	"github.com/keelrun/keel/internal/contract"
)

// Prompt caching as the real APIs report it, so what Keel saves is measured, not assumed.
//
// Anthropic caches only up to the cache_control breakpoints a request marks: a request reads the
// longest prefix an earlier request wrote (cache_read_input_tokens), writes the prefix up to its
// last breakpoint beyond that (cache_creation_input_tokens), and input_tokens counts only the rest.
// OpenAI caches on its own, prompts of 1,024 tokens and more, in 128-token steps, per
// prompt_cache_key; usage.prompt_tokens includes the cached part, reported in
// prompt_tokens_details.cached_tokens (on the Responses API: input_tokens and
// input_tokens_details.cached_tokens, the prefix being the instructions and the input items). A
// prefix is compared block by block (tools, system blocks, message blocks or input items), with
// cache_control markers left out, so marking a block does not change it.

// minCacheTokens is the shortest prefix either API caches.
const minCacheTokens = 1024

// openAICacheStep is the granularity of OpenAI's cached_tokens.
const openAICacheStep = 128

// promptCache remembers the prefixes requests have written, per wire format and cache key.
type promptCache struct {
	mu      sync.Mutex
	entries map[[32]byte]bool
}

func newPromptCache() *promptCache { return &promptCache{entries: map[[32]byte]bool{}} }

// cacheUse is the cache's part in one request's input: tokens read and written.
type cacheUse struct {
	Read, Write int
}

// cacheMarker is a cache_control breakpoint as the SDK writes it; markers are not input tokens.
var cacheMarker = []byte(`"cache_control":{"type":"ephemeral"}`)

// markerBytes is the size of a body's cache_control markers with their commas.
func markerBytes(body []byte) int {
	return bytes.Count(body, cacheMarker) * (len(cacheMarker) + 1)
}

// unit is one block of a prompt in cache order: its tokens and whether it carries a breakpoint.
type unit struct {
	text       []byte
	tokens     int
	breakpoint bool
}

// account works out a request's cache use and records what it writes. total is the request's
// input tokens; the result never exceeds it.
func (c *promptCache) account(format string, body []byte, total int) cacheUse {
	units, key := cacheUnits(format, body)
	if len(units) == 0 {
		return cacheUse{}
	}
	hashes := make([][32]byte, len(units))
	sums := make([]int, len(units))
	h := sha256.New()
	h.Write([]byte(format + "\x00" + key + "\x00"))
	n := 0
	for i, u := range units {
		h.Write(u.text)
		copy(hashes[i][:], h.Sum(nil))
		n += u.tokens
		sums[i] = n
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	read := 0
	for i := len(units) - 1; i >= 0; i-- {
		if c.entries[hashes[i]] {
			read = sums[i]
			break
		}
	}
	var use cacheUse
	if format == contract.ProviderAnthropic {
		last := -1
		for i, u := range units {
			if u.breakpoint && sums[i] >= minCacheTokens {
				c.entries[hashes[i]] = true
				last = i
			}
		}
		use.Read = read
		if last >= 0 && sums[last] > read {
			use.Write = sums[last] - read
		}
	} else {
		if sums[len(sums)-1] >= minCacheTokens {
			for i := range units {
				c.entries[hashes[i]] = true
			}
		}
		if total >= minCacheTokens {
			use.Read = read / openAICacheStep * openAICacheStep
		}
	}
	use.Read = min(use.Read, total)
	use.Write = min(use.Write, total-use.Read)
	return use
}

// cacheUnits splits a request body into its blocks in cache order, and returns OpenAI's
// prompt_cache_key.
func cacheUnits(format string, body []byte) ([]unit, string) {
	var req struct {
		Tools          []json.RawMessage `json:"tools"`
		System         json.RawMessage   `json:"system"`
		Messages       []json.RawMessage `json:"messages"`
		Instructions   json.RawMessage   `json:"instructions"`
		Input          json.RawMessage   `json:"input"`
		PromptCacheKey string            `json:"prompt_cache_key"`
	}
	if json.Unmarshal(body, &req) != nil {
		return nil, ""
	}
	var units []unit
	for _, t := range req.Tools {
		units = append(units, newUnit(t))
	}
	if format != contract.ProviderAnthropic {
		// Chat completions: the messages. Responses: the instructions, then the input items.
		if len(req.Instructions) > 0 && string(req.Instructions) != "null" {
			units = append(units, newUnit(req.Instructions))
		}
		for _, m := range req.Messages {
			units = append(units, newUnit(m))
		}
		units = append(units, blockUnits(req.Input)...)
		return units, req.PromptCacheKey
	}
	units = append(units, blockUnits(req.System)...)
	for _, m := range req.Messages {
		var msg struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(m, &msg) != nil {
			continue
		}
		for _, u := range blockUnits(msg.Content) {
			u.text = append([]byte(msg.Role+":"), u.text...)
			units = append(units, u)
		}
	}
	return units, ""
}

// blockUnits splits a string or a list of content blocks.
func blockUnits(raw json.RawMessage) []unit {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var blocks []json.RawMessage
	if json.Unmarshal(raw, &blocks) != nil {
		return []unit{newUnit(raw)}
	}
	out := make([]unit, 0, len(blocks))
	for _, b := range blocks {
		out = append(out, newUnit(b))
	}
	return out
}

// newUnit reads one block, noting and dropping its cache_control marker.
func newUnit(raw json.RawMessage) unit {
	var obj map[string]any
	if json.Unmarshal(raw, &obj) != nil {
		return unit{text: raw, tokens: tokens(len(raw))}
	}
	_, marked := obj["cache_control"]
	delete(obj, "cache_control")
	text, _ := json.Marshal(obj)
	return unit{text: text, tokens: tokens(len(text)), breakpoint: marked}
}
