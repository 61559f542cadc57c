// Package events carries live session events from activities to the people watching: activities
// publish each event to the session's sinks (a starter or a `starter watch` listening on
// events.host), and a Sink receives them. Delivery is best effort and never slows a session: the
// Publisher queues and posts from its own goroutines, and the durable record is the workflow's
// history, not this stream.
//
// The wire format: a POST of a Batch (Content-Type BatchContentType), the events of one stream in
// order, the first at position Seq. Each sink has a random secret, carried in its URL's fragment
// ("#key=", which HTTP clients never send): the sink URL travels only inside the session's input
// and its attach_sink signals, so it is as protected as the history. Every POST carries an
// HMAC-SHA256 of its body under that secret (AuthScheme), and the sink refuses any other. With
// codec.keys the body is encrypted with the codec's keys (codec.Keyring.Seal) before it leaves the
// worker, and the sink opens it with the same keys. A sink URL without a secret is a starter's
// from before batches: it gets one plain JSON event per POST, and nothing when codec.keys is set.
package events

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/keelrun/keel/internal/codec"
	"github.com/keelrun/keel/internal/contract"
)

// AuthScheme is the Authorization scheme of a POST to a sink: the base64 of the body's
// HMAC-SHA256 under the sink's secret follows it.
const AuthScheme = "Keel-HMAC-SHA256"

// secretSize is the length of a sink's secret in bytes.
const secretSize = 32

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
	// secret authenticates POSTs to the sink; nil for a sink of a starter from before batches,
	// which gets one plain event per POST.
	secret []byte
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
	var secret []byte
	if frag, err := url.ParseQuery(u.Fragment); err == nil && frag.Get("key") != "" {
		if secret, err = base64.RawURLEncoding.DecodeString(frag.Get("key")); err != nil || len(secret) == 0 {
			return target{}, errors.New("the sink URL's key is not base64")
		}
	}
	u.Fragment, u.RawFragment = "", ""
	return target{url: u.String(), display: u.Host, secret: secret, legacy: secret == nil}, nil
}

// sign authenticates a request to the target.
func (t target) sign(r *http.Request, body []byte) {
	if t.secret != nil {
		r.Header.Set("Authorization", AuthScheme+" "+mac(t.secret, body))
	}
}

// mac is the base64 of body's HMAC-SHA256 under secret.
func mac(secret, body []byte) string {
	h := hmac.New(sha256.New, secret)
	h.Write(body)
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// Sink receives events over HTTP on a port of events.host.
type Sink struct {
	ln     net.Listener
	srv    *http.Server
	events chan contract.Event
	once   sync.Once
	// turn serialises deliveries, so a stream's batches reach Events in order.
	turn chan struct{}
	// streams holds the last position delivered of each stream; gapSaid is set once the follower
	// was told that events were dropped (said once per sink: the first hole's size).
	streams map[string]int64
	gapSaid bool
	// secret is what POSTs are authenticated with; keys open encrypted batches (nil: none is
	// configured, and an encrypted batch is refused).
	secret []byte
	keys   *codec.Keyring
}

// Listen starts a sink on host (":0" port) without codec keys; see ListenWith.
func Listen(host string) (*Sink, error) { return ListenWith(host, nil) }

// ListenWith starts a sink on host (":0" port) with a fresh secret and returns it; URL, which
// carries the secret, is what goes into SessionInput.Sinks. keys are codec.keys, which open the
// batches workers encrypt with them; nil when none are configured.
func ListenWith(host string, keys *codec.Keyring) (*Sink, error) {
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("listening for session events: %w", err)
	}
	secret := make([]byte, secretSize)
	if _, err := rand.Read(secret); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("drawing the sink's secret: %w", err)
	}
	s := &Sink{ln: ln, events: make(chan contract.Event, 4096), turn: make(chan struct{}, 1), streams: map[string]int64{},
		secret: secret, keys: keys}
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
	if !s.authentic(r, body) {
		// Not from a worker of the session: refused, and nothing of it is shown.
		http.Error(w, "unauthenticated", http.StatusUnauthorized)
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
	for i, e := range b.Events {
		seq := b.Seq + int64(i)
		last := s.streams[b.Stream]
		if seq <= last {
			// Delivered already: a batch sent twice.
			continue
		}
		if gap := seq - last - 1; gap > 0 && !s.gapSaid {
			if !s.deliver(r, gapNotice(e, gap)) {
				return
			}
			s.gapSaid = true
		}
		if !s.deliver(r, e) {
			return
		}
		s.streams[b.Stream] = seq
	}
	w.WriteHeader(http.StatusNoContent)
}

// authentic says whether the POST carries the HMAC of its body under the sink's secret.
func (s *Sink) authentic(r *http.Request, body []byte) bool {
	scheme, sum, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, AuthScheme) {
		return false
	}
	return hmac.Equal([]byte(sum), []byte(mac(s.secret, body)))
}

// deliver hands e to the follower, unless the POST is given up first.
func (s *Sink) deliver(r *http.Request, e contract.Event) bool {
	select {
	case s.events <- e:
		return true
	case <-r.Context().Done():
		return false
	}
}

// gapNotice says, before e, that n events before it never arrived: a worker dropped them for a
// watcher that did not keep up. The live view has a hole; the session's transcript has none.
func gapNotice(e contract.Event, n int64) contract.Event {
	pieces := "events were"
	if n == 1 {
		pieces = "event was"
	}
	return contract.Event{Event: contract.EventNotice, WorkflowID: e.WorkflowID, Turn: e.Turn, Time: e.Time,
		Text: fmt.Sprintf("%d live %s dropped on the way to this terminal; the session's transcript is complete", n, pieces)}
}

// decode reads a POST's batch, opening it with the codec keys when it is encrypted.
func (s *Sink) decode(r *http.Request, body []byte) (Batch, error) {
	if r.Header.Get("Content-Type") != BatchContentType {
		return Batch{}, errors.New("POST a batch of events (" + BatchContentType + ")")
	}
	if codec.IsSealed(body) {
		if s.keys == nil {
			return Batch{}, errors.New("the events are encrypted with codec.keys, which this starter does not have")
		}
		plain, err := s.keys.Open(body)
		if err != nil {
			return Batch{}, fmt.Errorf("decrypting the events: %w", err)
		}
		body = plain
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
func (s *Sink) URL() string {
	return "http://" + s.ln.Addr().String() + batchPath + "#key=" + base64.RawURLEncoding.EncodeToString(s.secret)
}

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
