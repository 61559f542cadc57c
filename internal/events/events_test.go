package events

import (
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/codec"
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
// call ends, and Flush waits for such a sink at most stallAfter, and not at all once it stalled.
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
			if d := time.Since(start); d > 200*time.Millisecond {
				t.Fatalf("publishing 2000 events took %s", d)
			}
			start = time.Now()
			p.Flush(context.Background(), []string{url})
			// A sink that just stopped answering is given stallAfter; one that fails is not waited for.
			if d := time.Since(start); d > stallAfter+250*time.Millisecond {
				t.Fatalf("flushing took %s", d)
			}
			start = time.Now()
			p.Flush(context.Background(), []string{url})
			if d := time.Since(start); d > 50*time.Millisecond {
				t.Fatalf("flushing a sink known to be stalled took %s", d)
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

// recordBodies wraps the sink's handler to keep the bodies and headers of the POSTs it gets.
func recordBodies(s *Sink) func() []*http.Request {
	var mu sync.Mutex
	var got []*http.Request
	h := s.srv.Handler
	s.srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c := r.Clone(context.Background())
		c.Body = io.NopCloser(bytes.NewReader(b))
		mu.Lock()
		got = append(got, c)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	})
	return func() []*http.Request { mu.Lock(); defer mu.Unlock(); return slices.Clone(got) }
}

func testKeys(t *testing.T, id string) *codec.Keyring {
	t.Helper()
	k, err := codec.NewKeyring(codec.Key{ID: id, Secret: bytes.Repeat([]byte{id[0]}, codec.KeySize)})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestSinkRefusesForgedEvents: a POST without the sink's secret, with another secret, or a
// replayed batch never reaches the watcher; the first two are answered 401.
func TestSinkRefusesForgedEvents(t *testing.T) {
	s, err := Listen("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bodies := recordBodies(s)
	plain := strings.SplitN(s.URL(), "#", 2)[0]
	forged, _ := json.Marshal(Batch{Stream: "x", Seq: 1, Events: []contract.Event{{Event: contract.EventDelta, Text: "forged"}}})
	other := target{secret: bytes.Repeat([]byte{7}, secretSize)}
	cases := []struct {
		name string
		sign func(*http.Request, []byte)
	}{
		{"no secret", func(*http.Request, []byte) {}},
		{"another secret", other.sign},
		{"a bearer of the secret's MAC of nothing", func(r *http.Request, _ []byte) { r.Header.Set("Authorization", AuthScheme+" "+mac(s.secret, nil)) }},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(http.MethodPost, plain, bytes.NewReader(forged))
		req.Header.Set("Content-Type", BatchContentType)
		c.sign(req, forged)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", c.name, resp.StatusCode)
		}
	}
	// An authentic batch, then the same batch again, as someone who captured it would send it.
	p := NewPublisher()
	p.Publish(context.Background(), []string{s.URL()}, delta(1))
	p.Flush(context.Background(), []string{s.URL()})
	got := collect(t, s, 1, 5*time.Second)
	if got[0].Text != "piece 1 " {
		t.Fatalf("the authentic event: %+v", got[0])
	}
	var replay *http.Request
	for _, r := range bodies() {
		if r.Header.Get("Authorization") != "" && strings.HasPrefix(r.Header.Get("Authorization"), AuthScheme) && hmac.Equal([]byte(strings.TrimPrefix(r.Header.Get("Authorization"), AuthScheme+" ")), []byte(mac(s.secret, mustRead(r)))) {
			replay = r
		}
	}
	if replay == nil {
		t.Fatal("no authentic POST recorded")
	}
	req, _ := http.NewRequest(http.MethodPost, plain, bytes.NewReader(mustRead(replay)))
	req.Header = replay.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	select {
	case e := <-s.Events():
		t.Fatalf("the watcher got %+v from forged or replayed POSTs", e)
	default:
	}
}

func mustRead(r *http.Request) []byte {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b
}

// TestEncryptedEvents: with codec keys the bodies on the wire hold no event text, and a sink
// with the same keys reads them; one without keys, or with other keys, shows nothing.
func TestEncryptedEvents(t *testing.T) {
	keys := testKeys(t, "k1")
	cases := []struct {
		name  string
		keys  *codec.Keyring
		reads bool
	}{
		{"the same keys", keys, true},
		{"no keys", nil, false},
		{"other keys", testKeys(t, "k2"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := ListenWith("127.0.0.1", c.keys)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			bodies := recordBodies(s)
			p := NewPublisherWith(Options{Keys: keys, Log: slog.New(slog.DiscardHandler)})
			for i := 1; i <= 50; i++ {
				p.Publish(context.Background(), []string{s.URL()}, delta(i))
			}
			p.Flush(context.Background(), []string{s.URL()})
			if !waitFor(5*time.Second, func() bool { return len(bodies()) > 0 }) {
				t.Fatal("nothing was posted")
			}
			for _, r := range bodies() {
				if b := mustRead(r); bytes.Contains(b, []byte("piece")) || !codec.IsSealed(b) {
					t.Fatalf("a body in clear: %.200s", b)
				}
			}
			if c.reads {
				got := collect(t, s, 50, 5*time.Second)
				if got[49].Text != "piece 50 " {
					t.Fatalf("last event %+v", got[49])
				}
				return
			}
			select {
			case e := <-s.Events():
				t.Fatalf("a sink without the keys showed %+v", e)
			default:
			}
		})
	}
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// TestLegacySinkGetsNothingEncrypted: with codec keys, a sink URL without a secret (an older
// starter's, which reads plain events) is not posted to at all.
func TestLegacySinkGetsNothingEncrypted(t *testing.T) {
	var mu sync.Mutex
	posts := 0
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		posts++
		mu.Unlock()
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/events"
	p := NewPublisherWith(Options{Keys: testKeys(t, "k1"), Log: slog.New(slog.DiscardHandler)})
	p.Publish(context.Background(), []string{url}, delta(1))
	p.Flush(context.Background(), []string{url})
	if !waitFor(5*time.Second, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		q := p.queues[url]
		if q == nil {
			return false
		}
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.dropped == 1
	}) {
		t.Fatal("the event was not dropped")
	}
	mu.Lock()
	defer mu.Unlock()
	if posts != 0 {
		t.Fatalf("%d POSTs to a sink that reads events in clear", posts)
	}
}

// TestSinkSaysOnceThatEventsWereDropped: a hole in a stream's positions (events a worker dropped)
// is told once, before the first event after it, with its size; later holes add no more notices.
func TestSinkSaysOnceThatEventsWereDropped(t *testing.T) {
	s, err := Listen("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tg, err := parseTarget(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	post := func(seq int64, texts ...string) {
		t.Helper()
		b := Batch{Stream: "w1", Seq: seq}
		for _, x := range texts {
			b.Events = append(b.Events, contract.Event{Event: contract.EventDelta, WorkflowID: "s1", Turn: 2, Text: x})
		}
		body, _ := json.Marshal(b)
		req, _ := http.NewRequest(http.MethodPost, tg.url, bytes.NewReader(body))
		req.Header.Set("Content-Type", BatchContentType)
		tg.sign(req, body)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	post(1, "a", "b")
	post(6, "f")
	post(9, "i")
	got := collect(t, s, 5, 5*time.Second)
	var texts []string
	for _, e := range got {
		texts = append(texts, e.Event+":"+e.Text)
	}
	want := []string{"delta:a", "delta:b", "notice:3 live events were dropped on the way to this terminal; the session's transcript is complete", "delta:f", "delta:i"}
	if !slices.Equal(texts, want) {
		t.Fatalf("got %q\nwant %q", texts, want)
	}
	if got[2].WorkflowID != "s1" || got[2].Turn != 2 {
		t.Fatalf("the notice does not name the session and turn: %+v", got[2])
	}
}
