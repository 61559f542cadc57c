// Package events carries live session events from activities to the people watching: activities
// publish each event to the session's sinks (a starter or a `starter watch` listening on
// events.host), and a Sink receives them. Delivery is best effort and never slows a session: the
// Publisher queues and posts from its own goroutines, and the durable record is the workflow's
// history, not this stream.
//
// The wire format: a POST of a Batch (Content-Type BatchContentType), the events of one stream in
// order, the first at position Seq. A sink URL from a starter older than batches gets one JSON
// event per POST instead.
package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// BatchContentType marks a POST that holds a Batch.
const BatchContentType = "application/vnd.keel.events.v2+json"

// batchPath is the path of a sink that reads batches; sinks of older starters listen on /events.
const batchPath = "/v2/events"

// maxBody bounds what a sink reads of one POST.
const maxBody = 8 << 20

// Batch is one POST's events: positions Seq, Seq+1, ... of the stream Stream. A stream is one
// worker's queue for one sink; its positions start at 1 and have no holes unless events were
// dropped.
type Batch struct {
	Stream string           `json:"stream"`
	Seq    int64            `json:"seq"`
	Events []contract.Event `json:"events"`
}

// target is where a queue posts, read from a sink URL.
type target struct {
	url string
	// display names the sink in logs.
	display string
	// legacy is a sink of a starter from before batches: one event per POST.
	legacy bool
}

// parseTarget reads a sink URL.
func parseTarget(raw string) (target, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return target{}, fmt.Errorf("reading the sink URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return target{}, fmt.Errorf("the sink URL %q is not http", u.Redacted())
	}
	u.Fragment, u.RawFragment = "", ""
	return target{url: u.String(), display: u.Host, legacy: u.Path != batchPath}, nil
}

// sign authenticates a request to the target.
func (t target) sign(*http.Request, []byte) {}

// Sink receives events over HTTP on a port of events.host.
type Sink struct {
	ln     net.Listener
	srv    *http.Server
	events chan contract.Event
	once   sync.Once
	// turn serialises deliveries, so a stream's batches reach Events in order.
	turn chan struct{}
	// streams holds the last position delivered of each stream.
	streams map[string]int64
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
	s := &Sink{ln: ln, events: make(chan contract.Event, 4096), turn: make(chan struct{}, 1), streams: map[string]int64{}}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *Sink) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST events", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "reading the events: "+err.Error(), http.StatusBadRequest)
		return
	}
	b, err := s.decode(r, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	select {
	case s.turn <- struct{}{}:
	case <-r.Context().Done():
		return
	}
	defer func() { <-s.turn }()
	last := s.streams[b.Stream]
	for i, e := range b.Events {
		seq := b.Seq + int64(i)
		if seq <= last {
			// Delivered already: a batch sent twice.
			continue
		}
		select {
		case s.events <- e:
			s.streams[b.Stream] = seq
		case <-r.Context().Done():
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// decode reads a POST's batch.
func (s *Sink) decode(r *http.Request, body []byte) (Batch, error) {
	if r.Header.Get("Content-Type") != BatchContentType {
		return Batch{}, errors.New("POST a batch of events (" + BatchContentType + ")")
	}
	var b Batch
	if err := json.Unmarshal(body, &b); err != nil {
		return Batch{}, fmt.Errorf("decoding the events: %w", err)
	}
	if b.Stream == "" || b.Seq < 1 {
		return Batch{}, errors.New("the batch has no stream or position")
	}
	return b, nil
}

// URL is the address activities post to.
func (s *Sink) URL() string { return "http://" + s.ln.Addr().String() + batchPath }

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
