package fakegw

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// answer records a parsed request, then writes its reply or its injected fault.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, wf wire, t transcript, body []byte, at time.Time) {
	mode := strings.TrimSpace(r.Header.Get(ModeHeader))
	if mode == "" {
		mode = t.mode()
	}
	sum := sha256.Sum256(append([]byte(r.URL.Path+"\n"+mode+"\n"), body...))
	rec := Record{
		At: at, Path: r.URL.Path, Format: wf.name(), Mode: mode, Hash: hex.EncodeToString(sum[:]),
		First:     !t.hasAssistant() && !t.isCompactRequest(),
		Strict:    strings.Contains(t.allText(), contract.StrictInstruction),
		Persons:   t.personTexts(),
		Task:      t.task(),
		Reasoning: t.Reasoning,
		Compact:   t.isCompactRequest(), Summarised: len(t.summaries()) > 0, Calls: t.seenCalls(),
	}
	attempt, idx := s.stats.begin(rec)
	f := faultFor(mode, attempt, rec.First)
	if mode == ModeUsageLimit && rec.First && attempt == 1 {
		reset := s.opts.UsageReset
		if reset <= 0 {
			reset = DefaultUsageReset
		}
		f = fault{Kind: faultHTTP, Name: mode, Status: 429, RetryAfter: int(reset / time.Second), Error: rateLimitBody}
	}
	if mode == ModePrimaryDown && t.Model != FallbackModel {
		f = fault{Kind: faultHTTP, Name: mode, Status: 503, Error: serverErrorBody}
	}
	p := s.plan(mode, t, rec.Hash, len(body)-markerBytes(body), f)
	if f.Kind == 0 || f.Kind == faultSlow {
		p.Cache = s.cache.account(wf.name(), body, p.InputTokens)
	}
	s.log.Info("fake gateway request", "format", wf.name(), "mode", mode, "attempt", attempt,
		"first", rec.First, "strict", rec.Strict, "fault", f.Name, "tools", callNames(p.Reply.Calls))

	switch {
	case f.Kind == faultHTTP:
		if f.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
		}
		wf.writeError(w, f.Status, f.Error)
		s.stats.update(idx, func(r *Record) { r.Status, r.Fault = errorStatus(wf, f), f.Name })
	case f.Kind == faultHangUp:
		s.stats.update(idx, func(r *Record) { r.Fault = f.Name })
		hangUp(w)
	case !t.Stream:
		s.answerJSON(w, wf, p, f, idx)
	default:
		s.answerStream(w, r, wf, p, f, idx)
	}
}

// answerStream streams a reply, or the stream-shaped fault, and records how it ended.
func (s *Server) answerStream(w http.ResponseWriter, r *http.Request, wf wire, p plan, f fault, idx int) {
	st, err := startStream(w, r, s.opts.StreamDelay)
	if err == nil {
		switch f.Kind {
		case faultTruncatedStart:
			st.cut()
		case faultSchema:
			err = wf.streamMalformed(st, p)
		default:
			err = wf.streamReply(st, p)
			if err == nil && p.CutAfterText {
				st.cut()
			}
		}
	}
	gone := errors.Is(err, errClientGone)
	if err != nil && !gone {
		s.log.Error("fake gateway stream failed", "err", err)
	}
	s.stats.update(idx, func(rec *Record) {
		rec.Status, rec.Fault = http.StatusOK, f.Name
		rec.Tools, rec.Final = callNames(p.Reply.Calls), p.Reply.final() && p.Reply.Refusal == ""
		rec.Disconnected = gone
		if gone || f.Kind == faultTruncated || f.Kind == faultTruncatedStart {
			rec.Partial = st.text.String()
		}
	})
}

// answerJSON answers a request that did not ask for a stream; stream faults become a dropped
// connection or an unparseable body.
func (s *Server) answerJSON(w http.ResponseWriter, wf wire, p plan, f fault, idx int) {
	status := http.StatusOK
	switch f.Kind {
	case faultTruncatedStart, faultTruncated:
		status = 0
		hangUp(w)
	case faultSchema:
		writeBody(w, status, []byte(`{"id":"broken","choices":[`))
	default:
		if err := wf.writeJSON(w, p); err != nil {
			s.log.Error("fake gateway reply failed", "err", err)
		}
	}
	s.stats.update(idx, func(rec *Record) {
		rec.Status, rec.Fault = status, f.Name
		rec.Tools, rec.Final = callNames(p.Reply.Calls), p.Reply.final() && p.Reply.Refusal == ""
	})
}

// errorStatus is the status an HTTP fault is sent with on a wire.
func errorStatus(wf wire, f fault) int {
	if _, ok := wf.(anthropic); ok && f.Error.AnthropicStatus != 0 {
		return f.Error.AnthropicStatus
	}
	return f.Status
}

// plan decides the reply and how it is streamed.
func (s *Server) plan(mode string, t transcript, hash string, bodyLen int, f fault) plan {
	var r reply
	if t.isCompactRequest() {
		r = summaryReply(t)
	} else {
		r = decide(mode, t)
	}
	if f.Kind == faultRefusal {
		r = reply{Refusal: refusalText}
	}
	model := t.Model
	if model == "" {
		model = "fake-model"
	}
	p := plan{Model: model, ID: hash, Reply: r, IncludeUsage: t.IncludeUsage, EncryptedReasoning: t.EncryptedReasoning, InputTokens: tokens(bodyLen)}
	switch f.Kind {
	case faultSlow:
		p.Slow, p.SlowEvery = slowPieces(int(s.opts.SlowStreamDuration/s.opts.SlowStreamInterval)), s.opts.SlowStreamInterval
	case faultTruncated:
		p.CutAfterText = true
	}
	if mode == ModeBench && f.Kind == 0 {
		p.Slow, p.SlowEvery = benchSlow(t), BenchStreamEvery
	}
	p.OutputTokens = tokens(p.outputChars())
	return p
}

// slowText is what slow_stream mode says, one word at a time.
const slowText = "I am reading the task carefully and thinking about where the bug could be before I touch anything."

// slowPieces returns n one-word deltas.
func slowPieces(n int) []string {
	words := strings.Fields(slowText)
	out := make([]string, max(n, 1))
	for i := range out {
		out[i] = words[i%len(words)] + " "
	}
	return out
}

func callNames(cs []call) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}
