package fakegw

import (
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// wire is one provider's wire format.
type wire interface {
	// name is the provider it fakes (contract.Provider.Name), recorded in Record.Format.
	name() string
	// routes are the requests it answers, as http.ServeMux patterns.
	routes() []string
	parse(body []byte) (transcript, error)
	// writeError answers with an HTTP error in the provider's shape.
	writeError(w http.ResponseWriter, status int, e errorBody)
	// streamReply streams a reply; with plan.CutAfterText it returns right after the text.
	streamReply(s *stream, p plan) error
	// streamMalformed streams an event the provider's client cannot parse.
	streamMalformed(s *stream, p plan) error
	// writeJSON answers a request that did not ask for a stream.
	writeJSON(w http.ResponseWriter, p plan) error
}

// plan is everything a wire needs to write one reply.
type plan struct {
	Model string
	// ID is a hex seed for the response and tool call IDs; the same request gets the same IDs.
	ID    string
	Reply reply
	// Slow pieces stream before the reply's text, one every SlowEvery.
	Slow      []string
	SlowEvery time.Duration
	// CutAfterText stops the stream after the text deltas.
	CutAfterText bool
	IncludeUsage bool
	// EncryptedReasoning sends the reasoning item's encrypted_content (Responses API).
	EncryptedReasoning bool
	InputTokens        int
	OutputTokens       int
	// Cache is the prompt cache's part in InputTokens.
	Cache cacheUse
}

// piece is one text delta and the extra pause before it.
type piece struct {
	Text string
	Wait time.Duration
}

// textPieces lists the text deltas of a reply: the slow ones first, then its sentence in a few
// parts (all but the last when the stream is to be cut).
func (p plan) textPieces() []piece {
	var out []piece
	for _, s := range p.Slow {
		out = append(out, piece{Text: s, Wait: p.SlowEvery})
	}
	words := splitWords(p.Reply.Text, 3)
	if p.CutAfterText && len(words) > 1 {
		words = words[:len(words)-1] // the stream dies mid-sentence
	}
	for _, s := range words {
		out = append(out, piece{Text: s})
	}
	return out
}

// callID names the i-th tool call of this reply.
func (p plan) callID(prefix string, i int) string {
	return prefix + p.ID[:20] + string(rune('a'+i%26))
}

// splitWords cuts text into about n parts at spaces, keeping every character.
func splitWords(text string, n int) []string {
	if text == "" {
		return nil
	}
	words := strings.SplitAfter(text, " ")
	per := (len(words) + n - 1) / n
	var out []string
	for i := 0; i < len(words); i += per {
		out = append(out, strings.Join(words[i:min(i+per, len(words))], ""))
	}
	return out
}

// splitRunes cuts text into n parts of about equal size at rune boundaries.
func splitRunes(text string, n int) []string {
	if text == "" {
		return []string{""}
	}
	size := (len(text) + n - 1) / n
	var out []string
	for len(text) > 0 {
		cut := min(size, len(text))
		for cut < len(text) && !utf8.RuneStart(text[cut]) {
			cut++
		}
		out = append(out, text[:cut])
		text = text[cut:]
	}
	return out
}

// tokens estimates a token count the way the fake reports usage: characters / 4, at least 1.
func tokens(chars int) int { return max(1, chars/4) }

// outputChars counts the characters of a reply.
func (p plan) outputChars() int {
	n := len(p.Reply.Text) + len(p.Reply.Refusal)
	for _, s := range p.Slow {
		n += len(s)
	}
	for _, c := range p.Reply.Calls {
		n += len(c.Name) + len(c.Args)
	}
	return n
}
