package gateway

import (
	"context"
	"fmt"
)

// eventStream is what the SDKs' server-sent event streams have in common.
type eventStream[T any] interface {
	Next() bool
	Current() T
	Err() error
	Close() error
}

// readStream reads one provider's event stream: it refuses a successful response that is not an
// event stream, hands every event to add until add says the stream is over (its terminator
// arrived, so a gateway that holds the connection open cannot stall the call), and turns the
// error that ended the stream into one Classify can sort. The stream is closed on return.
func readStream[T any](ctx context.Context, provider string, x *exchange, s eventStream[T], add func(T) (end bool, err error)) error {
	defer func() { _ = s.Close() }()
	if x.streaming() && x.mediaType != "text/event-stream" {
		return &SchemaError{Provider: provider, Detail: fmt.Sprintf("content type %q instead of an event stream", x.mediaType)}
	}
	for s.Next() {
		end, err := add(s.Current())
		if err != nil {
			return err
		}
		if end {
			break
		}
	}
	if err := s.Err(); err != nil {
		return streamFailure(ctx, provider, x, err)
	}
	return nil
}
