// Package fakegw is a local model gateway for Keel's demo and tests. It speaks the real wire
// formats of OpenAI chat completions, OpenAI's Responses API and the Anthropic Messages API (all
// streaming over SSE), so the real provider clients talk to it unchanged, and it answers with a
// scripted, stateless model that walks the demo task. Faults and odd model behaviour are picked
// by a line of the task (see WithMode and the Mode constants).
package fakegw

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Options tune the fake gateway.
type Options struct {
	// StreamDelay is the pause before every stream event; zero streams as fast as possible.
	StreamDelay time.Duration
	// SlowStreamDuration and SlowStreamInterval shape slow_stream mode: one small text delta
	// every interval for about the duration (defaults 15 s and 250 ms).
	SlowStreamDuration time.Duration
	SlowStreamInterval time.Duration
	// UsageReset is the Retry-After of ModeUsageLimit, in whole seconds; zero means
	// DefaultUsageReset.
	UsageReset time.Duration
	// Logger receives one line per request; nil discards.
	Logger *slog.Logger
}

// Server is the fake gateway. Its zero value is not usable; call New.
type Server struct {
	opts  Options
	log   *slog.Logger
	stats *stats
	cache *promptCache
	mux   *http.ServeMux

	mu       sync.Mutex
	srv      *http.Server
	listener net.Listener
}

// New returns a gateway ready to serve through Handler or Start.
func New(opts Options) *Server {
	if opts.SlowStreamDuration <= 0 {
		opts.SlowStreamDuration = 15 * time.Second
	}
	if opts.SlowStreamInterval <= 0 {
		opts.SlowStreamInterval = 250 * time.Millisecond
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, log: log, stats: newStats(), cache: newPromptCache(), mux: http.NewServeMux()}
	for _, wf := range formats {
		for _, route := range wf.routes() {
			s.mux.HandleFunc(route, s.handle(wf))
		}
	}
	s.mux.HandleFunc("/", notFound)
	return s
}

// formats are the wire formats the gateway speaks, one per provider (TestEveryProviderHasAWire).
var formats = []wire{openAI{}, responsesAPI{}, anthropic{}}

// Handler serves every wire format: OpenAI clients (both APIs) with base URL BaseURL()+"/v1",
// Anthropic clients with base URL BaseURL().
func (s *Server) Handler() http.Handler { return s.mux }

// Start listens on addr (for example "127.0.0.1:0") and serves in the background until Close.
func (s *Server) Start(addr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return errors.New("starting fake gateway: already started")
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("starting fake gateway on %s: %w", addr, err)
	}
	s.listener = l
	s.srv = &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second}
	go func(srv *http.Server) {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("fake gateway stopped serving", "err", err)
		}
	}(s.srv)
	return nil
}

// BaseURL is "http://HOST:PORT" of a started server; OpenAI clients append "/v1".
func (s *Server) BaseURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener == nil {
		return ""
	}
	return "http://" + s.listener.Addr().String()
}

// Close stops a started server and drops open streams.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		return nil
	}
	err := s.srv.Close()
	s.srv, s.listener = nil, nil
	if err != nil {
		return fmt.Errorf("closing fake gateway: %w", err)
	}
	return nil
}

// Stats returns a copy of the counters.
func (s *Server) Stats() Stats {
	st, _ := s.stats.snapshot()
	return st
}

// WaitStats blocks until cond holds for the counters or ctx ends, so tests can wait for
// something the server notices asynchronously (a client disconnect) without sleeping.
func (s *Server) WaitStats(ctx context.Context, cond func(Stats) bool) (Stats, error) {
	return s.stats.wait(ctx, cond)
}

// maxBody bounds a request body.
const maxBody = 32 << 20

// handle answers one model call in the given wire format.
func (s *Server) handle(wf wire) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
		if err != nil {
			wf.writeError(w, http.StatusBadRequest, invalidRequest("the request body could not be read"))
			return
		}
		t, err := wf.parse(body)
		if err != nil {
			wf.writeError(w, http.StatusBadRequest, invalidRequest(err.Error()))
			return
		}
		s.answer(w, r, wf, t, body, at)
	}
}

// invalidRequest is the error body for a request the fake cannot read.
func invalidRequest(msg string) errorBody {
	return errorBody{OpenAIType: "invalid_request_error", OpenAIMessage: msg, AnthropicType: "invalid_request_error", AnthropicMessage: msg}
}

func notFound(w http.ResponseWriter, r *http.Request) {
	msg := fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path)
	if strings.Contains(r.URL.Path, "messages") {
		anthropic{}.writeError(w, http.StatusNotFound, errorBody{AnthropicType: "not_found_error", AnthropicMessage: msg})
		return
	}
	openAI{}.writeError(w, http.StatusNotFound, errorBody{OpenAIType: "invalid_request_error", OpenAIMessage: msg})
}
