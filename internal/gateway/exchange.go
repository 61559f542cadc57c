package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
)

// maxErrorBody bounds how much of an error response is kept for classification.
const maxErrorBody = 64 << 10

// exchange watches the one HTTP exchange of a Stream call through an SDK middleware. It records
// what the SDKs do not keep for us: the status and headers of a response whose body the SDK
// could not turn into its own error type, the media type of a successful response, and whether
// an OpenAI stream's `data: [DONE]` line arrived (the SDK treats a clean EOF the same way).
type exchange struct {
	status    int
	header    http.Header
	mediaType string
	body      []byte
	watchDone bool
	done      *doneWatcher
}

// middleware is an SDK middleware; both SDKs share the signature.
func (x *exchange) middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res == nil {
		return res, err
	}
	x.status, x.header = res.StatusCode, res.Header
	x.mediaType, _, _ = mime.ParseMediaType(res.Header.Get("Content-Type"))
	switch {
	case res.StatusCode >= 400:
		x.body, _ = io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		_ = res.Body.Close()
		res.Body = io.NopCloser(bytes.NewReader(x.body))
	case x.watchDone:
		x.done = &doneWatcher{rc: res.Body}
		res.Body = x.done
	}
	return res, nil
}

// sawDone reports whether the stream's terminator line arrived.
func (x *exchange) sawDone() bool { return x.done != nil && x.done.seen }

// streaming reports whether a successful event stream had begun.
func (x *exchange) streaming() bool { return x.status > 0 && x.status < 400 }

// statusError turns an error status the SDK did not type into a StatusError.
func (x *exchange) statusError(provider string, err error) error {
	return &StatusError{Provider: provider, StatusCode: x.status, Header: x.header, Body: string(x.body), Err: err}
}

// isDecodeError reports an error from decoding the body (JSON or an over-long SSE line), as
// opposed to reading it.
func isDecodeError(err error) bool {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	return errors.As(err, &syntax) || errors.As(err, &typ) || errors.Is(err, bufio.ErrTooLong)
}

// doneWatcher passes a response body through and notes whether a `data: [DONE]` line went by.
// Only whole lines are compared, so "[DONE]" inside a JSON string cannot count.
type doneWatcher struct {
	rc   io.ReadCloser
	line []byte
	seen bool
}

// doneLineMax is longer than any form of the terminator line, so longer lines are cut short.
const doneLineMax = 16

// Read reads from the body and watches the lines that pass.
func (w *doneWatcher) Read(p []byte) (int, error) {
	n, err := w.rc.Read(p)
	for _, b := range p[:n] {
		if b == '\n' || b == '\r' {
			w.endLine()
			continue
		}
		if len(w.line) < doneLineMax {
			w.line = append(w.line, b)
		}
	}
	if err == io.EOF {
		w.endLine()
	}
	return n, err
}

// Close closes the body, which drops the connection if it was not read to the end.
func (w *doneWatcher) Close() error { return w.rc.Close() }

// endLine checks the finished line for the terminator.
func (w *doneWatcher) endLine() {
	if v, ok := bytes.CutPrefix(w.line, []byte("data:")); ok && string(bytes.TrimLeft(v, " ")) == "[DONE]" {
		w.seen = true
	}
	w.line = w.line[:0]
}
