// Package events carries live session events from activities to the people watching: activities
// post each event to the session's sinks (a starter or a `starter watch` listening on loopback),
// and a Sink receives them. Delivery is best effort and never slows a session down for long: the
// durable record is the workflow's history, not this stream.
package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// postTimeout bounds one delivery; a sink that does not answer in time misses the event.
const postTimeout = 500 * time.Millisecond

// Publisher posts events to sinks.
type Publisher struct {
	client *http.Client
}

// NewPublisher returns a publisher with its own keep-alive connection pool.
func NewPublisher() *Publisher {
	return &Publisher{client: &http.Client{Timeout: postTimeout}}
}

// Publish sends e to every sink, in order, ignoring sinks that are gone.
func (p *Publisher) Publish(ctx context.Context, sinks []string, e contract.Event) {
	if p == nil || len(sinks) == 0 {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	body, err := json.Marshal(e)
	if err != nil {
		return
	}
	for _, url := range sinks {
		req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			continue
		}
		req.Header.Set("Content-Type", "application/json")
		if resp, err := p.client.Do(req); err == nil {
			resp.Body.Close()
		}
	}
}

// Sink receives events over HTTP on a loopback port.
type Sink struct {
	ln     net.Listener
	srv    *http.Server
	events chan contract.Event
	once   sync.Once
}

// Listen starts a sink on host (":0" port) and returns it; URL is what goes into SessionInput.Sinks.
func Listen(host string) (*Sink, error) {
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("listening for session events: %w", err)
	}
	s := &Sink{ln: ln, events: make(chan contract.Event, 4096)}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *Sink) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an event", http.StatusMethodNotAllowed)
		return
	}
	var e contract.Event
	if err := json.NewDecoder(r.Body).Decode(&e); err != nil {
		http.Error(w, "decoding the event: "+err.Error(), http.StatusBadRequest)
		return
	}
	select {
	case s.events <- e:
	case <-r.Context().Done():
	}
	w.WriteHeader(http.StatusNoContent)
}

// URL is the address activities post to.
func (s *Sink) URL() string { return "http://" + s.ln.Addr().String() + "/events" }

// Events delivers received events in arrival order.
func (s *Sink) Events() <-chan contract.Event { return s.events }

// Close stops the sink.
func (s *Sink) Close() error {
	var err error
	s.once.Do(func() {
		err = s.srv.Close()
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
	})
	return err
}
