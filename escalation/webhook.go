package escalation

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// Webhook headers. The signature covers the timestamp, so a captured request cannot be replayed
// later than MaxWebhookSkew.
const (
	WebhookTimestampHeader   = "X-Keel-Timestamp"
	WebhookSignatureHeader   = "X-Keel-Signature"
	WebhookIdempotencyHeader = "Idempotency-Key"
)

// MaxWebhookSkew is how far a webhook's timestamp may be from the receiver's clock.
const MaxWebhookSkew = 5 * time.Minute

// WebhookNotifier posts the escalation as JSON to a URL, signed with a shared secret. Within one
// process it posts each escalation once; across processes the Idempotency-Key header (the
// escalation ID) lets the receiver drop a repeat.
type WebhookNotifier struct {
	URL        string
	Secret     string
	HTTPClient *http.Client
	// Now is the clock used for the timestamp; nil means time.Now.
	Now func() time.Time

	sent sentSet
}

// Name identifies the channel in logs and in EscalationPolicy.Channels.
func (w *WebhookNotifier) Name() string { return contract.ChannelWebhook }

// Notify posts the escalation once; a non-2xx answer is an error so the activity retries.
func (w *WebhookNotifier) Notify(ctx context.Context, e contract.Escalation) error {
	if w.sent.has(noticeKey(e)) {
		return nil
	}
	body, err := json.Marshal(newWebhookBody(e))
	if err != nil {
		return fmt.Errorf("encoding escalation %s for the webhook: %w", e.ID, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("building the webhook request for escalation %s: %w", e.ID, err)
	}
	ts := strconv.FormatInt(w.now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(WebhookTimestampHeader, ts)
	req.Header.Set(WebhookSignatureHeader, SignWebhook(w.Secret, ts, body))
	req.Header.Set(WebhookIdempotencyHeader, e.ID)
	resp, err := httpClient(w.HTTPClient).Do(req)
	if err != nil {
		return fmt.Errorf("posting escalation %s to the webhook: %w", e.ID, err)
	}
	defer resp.Body.Close()
	if err := CheckStatus("posting escalation "+e.ID+" to the webhook", resp); err != nil {
		return err
	}
	w.sent.add(noticeKey(e))
	return nil
}

// WebhookBody is what the webhook receives: the escalation record (its fields at the top level,
// so decoding into contract.Escalation still works) plus the notice as people read it and the
// command that answers it. An approval notice carries the approval field (call ID, tool, digest,
// the exact arguments, deadline), choices approve and deny, and the starter approve command; the
// text shows the arguments clipped.
type WebhookBody struct {
	contract.Escalation
	// Text is the plain-text notice, the same as the terminal and GitHub show.
	Text string `json:"text"`
	// AnswerCommand is the CLI line that answers; empty for a notice that needs no answer.
	AnswerCommand string `json:"answer_command,omitempty"`
}

// newWebhookBody renders e for the webhook.
func newWebhookBody(e contract.Escalation) WebhookBody {
	b := WebhookBody{Escalation: e, Text: Text(e)}
	if !NoticeOnly(e) {
		b.AnswerCommand = AnswerCommand(e)
	}
	return b
}

func (w *WebhookNotifier) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

// SignWebhook returns the X-Keel-Signature value for a timestamp and body:
// "sha256=" + hex(HMAC-SHA256(secret, timestamp + "." + body)).
func SignWebhook(secret, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp))
	m.Write([]byte("."))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// VerifyWebhook checks a received webhook: the timestamp must be within MaxWebhookSkew of now and
// the signature must match the body, compared in constant time. Receivers pass the exact bytes
// they read from the body.
func VerifyWebhook(secret string, r *http.Request, body []byte, now time.Time) error {
	if secret == "" {
		return errors.New("verifying webhook: no secret configured")
	}
	ts := r.Header.Get(WebhookTimestampHeader)
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("verifying webhook: bad %s %q", WebhookTimestampHeader, ts)
	}
	if skew := now.Sub(time.Unix(sec, 0)).Abs(); skew > MaxWebhookSkew {
		return fmt.Errorf("verifying webhook: timestamp is %s away from now", skew.Round(time.Second))
	}
	got := r.Header.Get(WebhookSignatureHeader)
	if !strings.HasPrefix(got, "sha256=") {
		return fmt.Errorf("verifying webhook: %s is missing or not sha256", WebhookSignatureHeader)
	}
	if !hmac.Equal([]byte(got), []byte(SignWebhook(secret, ts, body))) {
		return errors.New("verifying webhook: signature does not match")
	}
	return nil
}
