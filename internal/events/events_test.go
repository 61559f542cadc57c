package events

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// collect reads n events from the sink, or fails after timeout.
func collect(t *testing.T, s *Sink, n int, timeout time.Duration) []contract.Event {
	t.Helper()
	var got []contract.Event
	deadline := time.After(timeout)
	for len(got) < n {
		select {
		case e := <-s.Events():
			got = append(got, e)
		case <-deadline:
			t.Fatalf("%d of %d events within %s: %+v", len(got), n, timeout, got)
		}
	}
	return got
}

func delta(i int) contract.Event {
	return contract.Event{Event: contract.EventDelta, WorkflowID: "s1", Turn: 1, Text: fmt.Sprintf("piece %d ", i), Seq: i}
}

// TestPublishOrderAndBatches: a healthy sink gets every event once and in order, in fewer POSTs
// than events.
func TestPublishOrderAndBatches(t *testing.T) {
	s, err := Listen("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	posts := countPosts(s)
	p := NewPublisher()
	for i := 1; i <= 500; i++ {
		p.Publish(context.Background(), []string{s.URL()}, delta(i))
	}
	p.Flush(context.Background(), []string{s.URL()})
	got := collect(t, s, 500, 10*time.Second)
	for i, e := range got {
		if e.Seq != i+1 {
			t.Fatalf("event %d is piece %d: out of order or repeated", i+1, e.Seq)
		}
	}
	if n := posts(); n >= 500 {
		t.Fatalf("%d POSTs for 500 events: not batched", n)
	}
}

// countPosts wraps the sink's handler to count the POSTs it gets.
func countPosts(s *Sink) func() int {
	var mu sync.Mutex
	n := 0
	h := s.srv.Handler
	s.srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		h.ServeHTTP(w, r)
	})
	return func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// stuckSinks are watchers that never answer: one that accepts connections and never reads (a
// stopped process, whose kernel still accepts), and an address whose connections never open.
func stuckSinks(t *testing.T) map[string]string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	// The listener's backlog accepts the connections; nobody reads them.
	return map[string]string{
		"accepts and never reads": "http://" + ln.Addr().String() + batchPath,
		"drops SYNs":              "http://10.255.255.1:9" + batchPath,
		"refuses connections":     "http://127.0.0.1:1" + batchPath,
	}
}

// TestPublishNeverWaits: publishing thousands of events to a watcher that never answers returns
// at once, drops what does not fit, says so once with the session, reports the count when the
// call ends, and Flush does not wait for such a sink.
func TestPublishNeverWaits(t *testing.T) {
	for name, url := range stuckSinks(t) {
		t.Run(name, func(t *testing.T) {
			var log bytes.Buffer
			var mu sync.Mutex
			p := NewPublisherWith(Options{QueueEvents: 64, Log: slog.New(slog.NewTextHandler(lockedWriter{&mu, &log}, nil))})
			start := time.Now()
			for i := 1; i <= 2000; i++ {
				p.Publish(context.Background(), []string{url}, delta(i))
			}
			p.Flush(context.Background(), []string{url})
			if d := time.Since(start); d > 300*time.Millisecond {
				t.Fatalf("publishing 2000 events and flushing took %s", d)
			}
			mu.Lock()
			out := log.String()
			mu.Unlock()
			if n := strings.Count(out, "dropping live events"); n != 1 {
				t.Fatalf("the drop was logged %d times, want once:\n%s", n, out)
			}
			if !strings.Contains(out, "session=s1") || !strings.Contains(out, "live events were dropped") {
				t.Fatalf("the log does not name the session or the count:\n%s", out)
			}
		})
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TestPublishBacksOff: a sink that fails is not tried per event; after a failure the sender
// waits, doubling, before it tries again.
func TestPublishBacksOff(t *testing.T) {
	var mu sync.Mutex
	tries := 0
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tries++
		mu.Unlock()
		http.Error(w, "no", http.StatusInternalServerError)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := "http://" + ln.Addr().String() + batchPath
	p := NewPublisherWith(Options{RetryFirst: 100 * time.Millisecond, Log: slog.New(slog.DiscardHandler)})
	stop := time.Now().Add(time.Second)
	events := 0
	for time.Now().Before(stop) {
		events++
		p.Publish(context.Background(), []string{url}, delta(events))
		time.Sleep(2 * time.Millisecond)
	}
	mu.Lock()
	n := tries
	mu.Unlock()
	// 100, 200, 400 ms of back-off fit in the second: four tries, give or take one.
	if n > 6 || n < 2 {
		t.Fatalf("%d POSTs to a failing sink for %d events over a second; want a few, backing off", n, events)
	}
}

// TestFlushWaitsForAHealthySink: what was published before Flush is at the sink when it returns.
func TestFlushWaitsForAHealthySink(t *testing.T) {
	s, err := Listen("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := NewPublisher()
	for i := 1; i <= 300; i++ {
		p.Publish(context.Background(), []string{s.URL()}, delta(i))
	}
	p.Flush(context.Background(), []string{s.URL()})
	if n := len(s.events); n != 300 {
		t.Fatalf("%d of 300 events at the sink when Flush returned", n)
	}
}

// TestLegacySink: a sink URL of a starter from before batches gets one event per POST, as it
// reads them.
func TestLegacySink(t *testing.T) {
	got := make(chan string, 10)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		_, _ = b.ReadFrom(r.Body)
		got <- r.Header.Get("Content-Type") + " " + b.String()
		w.WriteHeader(http.StatusNoContent)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	p := NewPublisher()
	url := "http://" + ln.Addr().String() + "/events"
	p.Publish(context.Background(), []string{url}, delta(1))
	p.Publish(context.Background(), []string{url}, delta(2))
	p.Flush(context.Background(), []string{url})
	for i := 1; i <= 2; i++ {
		select {
		case b := <-got:
			if !strings.HasPrefix(b, "application/json {") || !strings.Contains(b, fmt.Sprintf(`"piece %d `, i)) {
				t.Fatalf("POST %d: %s", i, b)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the legacy sink got nothing")
		}
	}
}
