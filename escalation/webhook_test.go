package escalation

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/samples"
)

// webhookReceiver is a receiver as a user would write it: it verifies every request and records
// what it accepted.
type webhookReceiver struct {
	secret string
	status int
	mu     sync.Mutex
	got    []contract.Escalation
	keys   []string
	errs   []error
}

func (rc *webhookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err := VerifyWebhook(rc.secret, r, body, time.Now()); err != nil {
		rc.errs = append(rc.errs, err)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var e contract.Escalation
	if err := json.Unmarshal(body, &e); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if rc.status != 0 {
		w.WriteHeader(rc.status)
		return
	}
	rc.got = append(rc.got, e)
	rc.keys = append(rc.keys, r.Header.Get(WebhookIdempotencyHeader))
}

func TestWebhookNotifierPostsSignedOnce(t *testing.T) {
	rc := &webhookReceiver{secret: "s3cret"}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	n := &WebhookNotifier{URL: srv.URL + "/hook", Secret: "s3cret", HTTPClient: srv.Client()}
	e := samples.Escalation("esc-w1")

	require.NoError(t, n.Notify(context.Background(), e))
	require.NoError(t, n.Notify(context.Background(), e))

	rc.mu.Lock()
	defer rc.mu.Unlock()
	assert.Empty(t, rc.errs)
	require.Len(t, rc.got, 1, "second Notify must not post again")
	assert.Equal(t, e.ID, rc.got[0].ID)
	assert.Equal(t, e.LastError, rc.got[0].LastError)
	assert.Equal(t, []string{"esc-w1"}, rc.keys)
	assert.Equal(t, "webhook", n.Name())
}

func TestWebhookNotifierErrors(t *testing.T) {
	tests := []struct {
		name       string
		rcSecret   string
		status     int
		wantStatus int
		permanent  bool
	}{
		{name: "server error retries", rcSecret: "k", status: http.StatusBadGateway, wantStatus: 502},
		{name: "wrong secret is refused", rcSecret: "other", wantStatus: 401, permanent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := &webhookReceiver{secret: tt.rcSecret, status: tt.status}
			srv := httptest.NewServer(rc)
			defer srv.Close()
			n := &WebhookNotifier{URL: srv.URL, Secret: "k", HTTPClient: srv.Client()}
			e := samples.Escalation("esc-w2")
			for range 2 { // a failed post is not remembered: the retry posts again
				err := n.Notify(context.Background(), e)
				var se *StatusError
				require.True(t, errors.As(err, &se), "got %v", err)
				assert.Equal(t, tt.wantStatus, se.Code)
				assert.Equal(t, tt.permanent, se.Permanent())
			}
			rc.mu.Lock()
			defer rc.mu.Unlock()
			assert.Empty(t, rc.got)
		})
	}
}

func TestVerifyWebhook(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"esc-1"}`)
	ts := strconv.FormatInt(now.Unix(), 10)
	old := strconv.FormatInt(now.Add(-6*time.Minute).Unix(), 10)
	ahead := strconv.FormatInt(now.Add(6*time.Minute).Unix(), 10)
	tests := []struct {
		name    string
		ts      string
		sig     string
		body    []byte
		wantErr string
	}{
		{name: "good", ts: ts, sig: SignWebhook("k", ts, body), body: body},
		{name: "good at 4 minutes", ts: strconv.FormatInt(now.Add(-4*time.Minute).Unix(), 10), sig: SignWebhook("k", strconv.FormatInt(now.Add(-4*time.Minute).Unix(), 10), body), body: body},
		{name: "bad signature", ts: ts, sig: SignWebhook("other", ts, body), body: body, wantErr: "does not match"},
		{name: "body changed", ts: ts, sig: SignWebhook("k", ts, body), body: []byte(`{"id":"esc-2"}`), wantErr: "does not match"},
		{name: "stale", ts: old, sig: SignWebhook("k", old, body), body: body, wantErr: "timestamp is 6m0s away"},
		{name: "from the future", ts: ahead, sig: SignWebhook("k", ahead, body), body: body, wantErr: "timestamp is 6m0s away"},
		{name: "timestamp swapped after signing", ts: strconv.FormatInt(now.Unix()+1, 10), sig: SignWebhook("k", ts, body), body: body, wantErr: "does not match"},
		{name: "no timestamp", ts: "", sig: SignWebhook("k", "", body), body: body, wantErr: "bad X-Keel-Timestamp"},
		{name: "no prefix", ts: ts, sig: strings.TrimPrefix(SignWebhook("k", ts, body), "sha256="), body: body, wantErr: "not sha256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", nil)
			r.Header.Set(WebhookTimestampHeader, tt.ts)
			r.Header.Set(WebhookSignatureHeader, tt.sig)
			err := VerifyWebhook("k", r, tt.body, now)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}
