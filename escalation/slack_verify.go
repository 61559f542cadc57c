package escalation

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Slack request signing (version v0) headers.
const (
	slackSignatureHeader = "X-Slack-Signature"
	slackTimestampHeader = "X-Slack-Request-Timestamp"
	slackRetryHeader     = "X-Slack-Retry-Num"
)

// MaxSlackSkew is how old (or how far ahead) a signed Slack request may be; older ones are
// refused as possible replays, as Slack recommends.
const MaxSlackSkew = 5 * time.Minute

// errStale and errBadSignature are the two reasons a request fails verification.
var (
	errStale        = errors.New("stale or missing timestamp")
	errBadSignature = errors.New("bad signature")
)

// SignSlack computes the v0 signature Slack sends in X-Slack-Signature:
// "v0=" + hex(HMAC-SHA256(secret, "v0:" + timestamp + ":" + body)).
func SignSlack(secret, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "v0:%s:", timestamp)
	m.Write(body)
	return "v0=" + hex.EncodeToString(m.Sum(nil))
}

// verifySlack checks the timestamp window first (cheap, and it bounds replays) and then the
// signature in constant time.
func verifySlack(secret string, h http.Header, body []byte, now time.Time) error {
	ts := h.Get(slackTimestampHeader)
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || now.Sub(time.Unix(sec, 0)).Abs() > MaxSlackSkew {
		return errStale
	}
	want := SignSlack(secret, ts, body)
	if !hmac.Equal([]byte(h.Get(slackSignatureHeader)), []byte(want)) {
		return errBadSignature
	}
	return nil
}
