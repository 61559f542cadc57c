package contract

// Compaction is the view of a compacted transcript that model calls see. The full transcript stays
// in the store under the session's head, for watch and fork; the model sees the chain at Head (the
// messages before the first model reply, then a summary of what was folded) followed by the full
// transcript from message Cut on.
type Compaction struct {
	Head string `json:"head"`
	Cut  int    `json:"cut"`
}

// CompactRequest is the input of the CompactTranscript activity: fold the oldest turns of the
// stored transcript at Head, keeping the newest KeepReplies model replies (and what follows them)
// as they are, into one summary.
type CompactRequest struct {
	SessionID string `json:"session_id"`
	// Turn is the last turn done; the compaction happens before the next one.
	Turn int    `json:"turn"`
	Head string `json:"head"`
	// Compaction is the view so far, nil before the first compaction.
	Compaction  *Compaction `json:"compaction,omitempty"`
	KeepReplies int         `json:"keep_replies"`
	// MinReplies is the fewest model replies worth a summary; fewer fold nothing.
	MinReplies int `json:"min_replies"`
	// ModelSettings are the session's, as in ModelRequest.
	ModelSettings
}

// CompactResult is the output of the CompactTranscript activity. Compaction is nil when there was
// not enough to fold (then no model call was made).
type CompactResult struct {
	Compaction *Compaction `json:"compaction,omitempty"`
	// Replies is how many model replies (with their tool results) the summary now stands for.
	Replies int   `json:"replies,omitempty"`
	Usage   Usage `json:"usage"`
	Attempt int   `json:"attempt,omitempty"`
	// Model is the model that wrote the summary, as provider/model; Fallback as in ModelResponse.
	Model    string `json:"model,omitempty"`
	Fallback bool   `json:"fallback,omitempty"`
	// SavedTokens estimates the input tokens every later model call is spared: the tokens of the
	// folded messages less those of the summary, at the last call's tokens per character.
	SavedTokens int64 `json:"saved_tokens,omitempty"`
}

// CompactInstruction is the system prompt of the model call that writes a compaction's summary.
// The conversation to summarise follows as one user message.
const CompactInstruction = "You compact the transcript of an autonomous coding session so that it can go on within its context window. " +
	"Summarise the conversation below for the assistant that will continue it: what has been done (each tool call and what it showed or changed), " +
	"what was learned, what failed, decisions taken and what remains to do. Keep file paths, commands, names and exact values the work depends on. " +
	"Write plain text only, at most 400 words, and call no tools."

// CompactionPrefix starts the message that stands for the folded turns in what the model sees.
const CompactionPrefix = "[keel] Summary of the earlier part of this session, written to keep the context small (the full transcript is kept):"
