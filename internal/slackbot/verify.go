package slackbot

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/slack-go/slack"
)

// Slack request signing (version v0) headers.
const (
	slackSignatureHeader = "X-Slack-Signature"
	slackTimestampHeader = "X-Slack-Request-Timestamp"
	slackRetryHeader     = "X-Slack-Retry-Num"
)

// MaxSkew is how old (or how far ahead) a signed Slack request may be; older ones are
// refused as possible replays, as Slack recommends.
const MaxSkew = 5 * time.Minute

// errStale and errBadSignature are the two reasons a request fails verification.
var (
	errStale        = errors.New("stale or missing timestamp")
	errBadSignature = errors.New("bad signature")
)

// verifySlack checks the timestamp window on the bot's clock first (cheap, it bounds replays, and
// the clock is the bot's so tests can move it), then the signature with slack-go's
// SecretsVerifier, which compares in constant time.
func verifySlack(secret string, h http.Header, body []byte, now time.Time) error {
	sec, err := strconv.ParseInt(h.Get(slackTimestampHeader), 10, 64)
	if err != nil || now.Sub(time.Unix(sec, 0)).Abs() > MaxSkew {
		return errStale
	}
	sv, err := slack.NewSecretsVerifier(h, secret)
	if errors.Is(err, slack.ErrExpiredTimestamp) {
		return errStale
	}
	if err != nil {
		return errBadSignature
	}
	if _, err := sv.Write(body); err != nil {
		return errBadSignature
	}
	if sv.Ensure() != nil {
		return errBadSignature
	}
	return nil
}
