package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// streamFailure turns the error that ended a stream into one Classify can sort: a cancellation
// while the context is done; the SDK's typed API error, or an error event inside the stream, as
// is; an untyped error status as a StatusError; a body that does not decode as a SchemaError;
// and a read error after the stream began as a TruncatedError. Connection errors before any
// response pass through wrapped.
func streamFailure(ctx context.Context, provider string, x *exchange, err error) error {
	var (
		oe  *openai.Error
		ae  *anthropic.Error
		sse *ssestream.StreamError
	)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s stream stopped: %w", provider, errors.Join(ctx.Err(), err))
	case errors.As(err, &oe), errors.As(err, &ae), errors.As(err, &sse):
		return fmt.Errorf("%s request failed: %w", provider, err)
	case x.status >= 400:
		return x.statusError(provider, err)
	case x.streaming() && isDecodeError(err):
		return &SchemaError{Provider: provider, Detail: "event does not decode", Err: err}
	case x.streaming():
		return &TruncatedError{Provider: provider, Err: err}
	default:
		return fmt.Errorf("%s request failed: %w", provider, err)
	}
}
