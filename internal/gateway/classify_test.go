package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// refusedErr dials a loopback port nobody listens on and returns the real error.
func refusedErr(t *testing.T) error {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = http.Post("http://"+addr+"/v1/chat/completions", "application/json", nil)
	if err == nil {
		t.Fatal("dial to a closed port succeeded")
	}
	return err
}

func TestClassifyErrors(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		deltas int
		class  string
		handle Handling
	}{
		{"cancelled", fmt.Errorf("reading: %w", context.Canceled), 0, contract.ClassCancelled, Stop},
		{"cancelled after output", errors.Join(context.Canceled, io.ErrUnexpectedEOF), 3, contract.ClassCancelled, Stop},
		{"connection refused", refusedErr(t), 0, contract.ClassTransport, Retry},
		{"dns failure", &net.DNSError{Err: "no such host", Name: "gw.invalid", IsNotFound: true}, 0, contract.ClassTransport, Retry},
		{"eof before any byte", fmt.Errorf("post: %w", io.EOF), 0, contract.ClassTransport, Retry},
		{"deadline", context.DeadlineExceeded, 0, contract.ClassTransport, Retry},
		{"cut before output", &TruncatedError{Provider: "openai", Err: io.ErrUnexpectedEOF}, 0, contract.ClassTransport, Retry},
		{"cut after output", &TruncatedError{Provider: "openai", Err: io.ErrUnexpectedEOF}, 2, contract.ClassTruncated, Surface},
		{"schema", &SchemaError{Provider: "openai", Detail: "x"}, 0, contract.ClassSchema, Retry},
		{"schema after output", &SchemaError{Provider: "openai", Detail: "x"}, 1, contract.ClassTruncated, Surface},
		{"refusal", &RefusalError{Provider: "anthropic", Reason: "no"}, 0, contract.ClassRefusal, Surface},
		{"status 402", &StatusError{StatusCode: 402, Body: "pay up"}, 0, contract.ClassBudget, Surface},
		{"status 502", &StatusError{StatusCode: 502, Body: "<html>bad gateway</html>"}, 0, contract.ClassTransport, Retry},
		{"status 502 after output", &StatusError{StatusCode: 502}, 4, contract.ClassTruncated, Surface},
		{"status 401", &StatusError{StatusCode: 401, Body: `{"error":{"message":"bad key"}}`}, 0, contract.ClassAuth, Surface},
		{"status 403", &StatusError{StatusCode: 403, Body: `{"error":{"message":"this key may not use the model"}}`}, 0, contract.ClassAuth, Surface},
		{"authentication error type in a 400", &StatusError{StatusCode: 400, Body: `{"error":{"type":"authentication_error","message":"invalid x-api-key"}}`}, 0, contract.ClassAuth, Surface},
		{"status 404", &StatusError{StatusCode: 404}, 0, contract.ClassUnknown, Surface},
		{"stream event server_error", &EventError{Event: "response.failed", Code: "server_error"}, 0, contract.ClassTransport, Retry},
		{"stream event rate_limit_exceeded", &EventError{Event: "error", Code: "rate_limit_exceeded"}, 0, contract.ClassThrottle, Retry},
		{"stream event insufficient_quota", &EventError{Event: "error", Code: "insufficient_quota"}, 0, contract.ClassBudget, Surface},
		{"stream event server_error after output", &EventError{Event: "response.failed", Code: "server_error"}, 2, contract.ClassTruncated, Surface},
		{"stream event invalid_prompt", &EventError{Event: "response.failed", Code: "invalid_prompt", Message: "flagged"}, 0, contract.ClassUnknown, Surface},
		{"stream event without a code", &EventError{Event: "response.failed", Message: "the response failed without an error"}, 0, contract.ClassUnknown, Surface},
		{"unrecognised", errors.New("something odd"), 0, contract.ClassUnknown, Surface},
		{"nil", nil, 0, contract.ClassUnknown, Surface},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Classify(tt.err, tt.deltas)
			if d.Class != tt.class || d.Handling != tt.handle {
				t.Errorf("Classify(%v, %d) = %s/%s, want %s/%s", tt.err, tt.deltas, d.Class, d.Handling, tt.class, tt.handle)
			}
			if d.Message == "" {
				t.Error("diagnosis has no message")
			}
		})
	}
}

func TestClassifyRetryAfterOnlyWhenRetrying(t *testing.T) {
	h := http.Header{}
	h.Set("Retry-After", "5")
	err := &StatusError{StatusCode: 429, Header: h}
	if d := Classify(err, 0); d.RetryAfter != 5*time.Second || d.Class != contract.ClassThrottle {
		t.Errorf("before output: %+v, want throttle with 5s", d)
	}
	if d := Classify(err, 1); d.RetryAfter != 0 || d.Handling != Surface {
		t.Errorf("after output: %+v, want surface without a wait", d)
	}
}

func TestAttemptCap(t *testing.T) {
	want := map[string]int{
		contract.ClassTransport: 4, contract.ClassThrottle: 6, contract.ClassSchema: 2,
		contract.ClassTruncated: 1, contract.ClassRefusal: 1, contract.ClassBudget: 1,
		contract.ClassUnknown: 1, contract.ClassCancelled: 1, "": 1,
	}
	for class, n := range want {
		if got := AttemptCap(class); got != n {
			t.Errorf("AttemptCap(%q) = %d, want %d", class, got, n)
		}
	}
}

func TestNewUnknownProvider(t *testing.T) {
	_, err := New(Config{Provider: "gemini"})
	if err == nil || !strings.Contains(err.Error(), `"gemini"`) {
		t.Fatalf("New(gemini) error = %v, want one naming the provider", err)
	}
}

// TestClassifyEventErrorMessage: a failure the stream reported says so, with the provider's words.
func TestClassifyEventErrorMessage(t *testing.T) {
	d := Classify(&EventError{Provider: ProviderOpenAIResponses, Event: "response.failed", Code: "server_error", Message: "The model failed."}, 0)
	if !strings.Contains(d.Message, "error event in the stream: The model failed.") {
		t.Errorf("message = %q, want it to name the error event and its message", d.Message)
	}
}
