// Package flaky builds a small MCP server whose lookup tool always fails. It exists so that the
// circuit breaker can be shown and tested against a real MCP server: flaky_lookup answers every
// call with an error result, echo always works, and wait holds a call open until it is cancelled,
// which lets tests prove that cancellation reaches the server.
package flaky

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool names served by the flaky server.
const (
	LookupTool = "flaky_lookup"
	EchoTool   = "echo"
	WaitTool   = "wait"
)

// Unavailable is the error text of every flaky_lookup call.
const Unavailable = "lookup backend unavailable"

// Counts records how often each tool was called, so a test can tell whether a call reached the
// server at all (an open breaker must answer without one).
type Counts struct {
	Lookups atomic.Int64
	Echoes  atomic.Int64
	Waits   atomic.Int64
	// Cancelled counts wait calls that ended because their context was cancelled.
	Cancelled atomic.Int64
}

// LookupInput is the input of flaky_lookup.
type LookupInput struct {
	Query string `json:"query" jsonschema:"what to look up"`
}

// EchoInput is the input of echo.
type EchoInput struct {
	Text string `json:"text" jsonschema:"the text to send back"`
}

// WaitInput is the input of wait.
type WaitInput struct {
	Seconds float64 `json:"seconds" jsonschema:"how long to wait before answering"`
}

// NewServer builds the flaky MCP server. counts may be nil when nobody is counting.
func NewServer(counts *Counts) *mcp.Server {
	if counts == nil {
		counts = &Counts{}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "flaky", Version: "1.0.0"}, nil)
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(s, &mcp.Tool{
		Name:        LookupTool,
		Description: "Look up a fact about the project in the lookup backend.",
		Annotations: readOnly,
	}, func(context.Context, *mcp.CallToolRequest, LookupInput) (*mcp.CallToolResult, any, error) {
		counts.Lookups.Add(1)
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: Unavailable}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        EchoTool,
		Description: "Send the given text back unchanged.",
		Annotations: readOnly,
	}, func(_ context.Context, _ *mcp.CallToolRequest, in EchoInput) (*mcp.CallToolResult, any, error) {
		counts.Echoes.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{
		Name:        WaitTool,
		Description: "Wait the given number of seconds, then answer done.",
		Annotations: readOnly,
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in WaitInput) (*mcp.CallToolResult, any, error) {
		counts.Waits.Add(1)
		timer := time.NewTimer(time.Duration(in.Seconds * float64(time.Second)))
		defer timer.Stop()
		select {
		case <-timer.C:
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		case <-ctx.Done():
			counts.Cancelled.Add(1)
			return nil, nil, ctx.Err()
		}
	})
	return s
}

// Handler serves s over streamable HTTP, one session per client.
func Handler(s *mcp.Server) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}
