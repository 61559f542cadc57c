package escalation

import (
	"fmt"
	"io"
	"net/http"
	"strings"
)

// StatusError is a non-2xx answer from a channel's HTTP API. The notice activity can call
// Permanent to stop retrying a request that can never succeed (bad token, unknown repository).
type StatusError struct {
	Op   string
	Code int
	Body string
}

// Error says what was being done and what the server answered.
func (e *StatusError) Error() string {
	return fmt.Sprintf("%s: status %d: %s", e.Op, e.Code, e.Body)
}

// Permanent reports whether retrying the same request is pointless: a 4xx other than timeouts,
// conflicts and rate limits.
func (e *StatusError) Permanent() bool {
	switch e.Code {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return false
	}
	return e.Code >= 400 && e.Code < 500
}

// CheckStatus turns a non-2xx response into a StatusError carrying the start of the body.
func CheckStatus(op string, resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return &StatusError{Op: op, Code: resp.StatusCode, Body: strings.TrimSpace(string(b))}
}

// httpClient returns c, or http.DefaultClient when c is nil.
func httpClient(c *http.Client) *http.Client {
	if c != nil {
		return c
	}
	return http.DefaultClient
}
