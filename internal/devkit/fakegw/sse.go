package fakegw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// errClientGone reports that the client closed the connection while a reply streamed.
var errClientGone = errors.New("client closed the connection")

// stream writes server-sent events, pausing between them, and notices when the client leaves.
type stream struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	ctx   context.Context
	delay time.Duration
	// text is the visible text sent so far, kept for the partial-text record.
	text strings.Builder
}

// startStream sends 200 and the SSE headers at once, so the client sees the stream open.
func startStream(w http.ResponseWriter, r *http.Request, delay time.Duration) (*stream, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	s := &stream{w: w, rc: http.NewResponseController(w), ctx: r.Context(), delay: delay}
	return s, s.flush()
}

// event writes one event; an empty name writes a data-only event as OpenAI does.
func (s *stream) event(name string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encoding stream event: %w", err)
	}
	return s.raw(name, string(b))
}

// raw writes one event with the data as given, valid JSON or not.
func (s *stream) raw(name, data string) error {
	if err := s.pause(s.delay); err != nil {
		return err
	}
	var b strings.Builder
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	b.WriteString("data: " + data + "\n\n")
	if _, err := s.w.Write([]byte(b.String())); err != nil {
		return errClientGone
	}
	return s.flush()
}

// shown records text the user has now seen.
func (s *stream) shown(text string) { s.text.WriteString(text) }

func (s *stream) flush() error {
	if err := s.rc.Flush(); err != nil {
		return errClientGone
	}
	return nil
}

// pause waits d, or returns errClientGone as soon as the client disconnects.
func (s *stream) pause(d time.Duration) error {
	if s.ctx.Err() != nil {
		return errClientGone
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-s.ctx.Done():
		return errClientGone
	}
}

// cut ends the response by closing the connection without the stream's terminator (and, for a
// chunked body, without its last chunk), as a dropped upstream connection would.
func (s *stream) cut() {
	_ = s.flush()
	hangUp(s.w)
}

// hangUp closes the client's connection. It panics with http.ErrAbortHandler (which the server
// recovers silently) when the connection cannot be taken over, as on HTTP/2.
func hangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}
