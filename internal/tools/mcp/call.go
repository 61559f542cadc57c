package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keelrun/keel/internal/contract"
)

// maxOutput caps the text of one result, so one chatty tool cannot fill the transcript or a
// workflow payload.
const maxOutput = 100_000

// Call runs tool on server once with args, the argument text exactly as the model sent it. tool is
// the name the model saw (from Tools); a name Tools never listed is sent as is. Every failure comes
// back as a result with IsError set whose Content tells the model whether anything changed and
// what to do next: an error result from the tool, a server that cannot be reached (nothing was
// sent), a connection that broke mid-call (outcome unknown), a call the server refused, and a
// cancelled context, which stops the call at once. Call never retries; a broken connection is
// reopened on the next call.
func (m *Manager) Call(ctx context.Context, server, tool, args string) contract.ToolResult {
	s := m.lookup(server)
	if s == nil {
		return failed(noServerFeedback(server, tool))
	}
	info, known := m.resolve(server, tool)
	if !known && !m.listed(server) {
		// A fresh worker may run a call before it has listed anything; learn the names first so
		// an exposed alias finds its tool and the read-only hint is known.
		_, _ = m.Tools(ctx)
		info, known = m.resolve(server, tool)
	}
	c := call{server: server, tool: tool, readOnly: info.readOnly && known}
	arguments, ok := objectArgs(args)
	if !ok {
		return failed(c.badArgs())
	}
	cs, err := m.session(ctx, s)
	if err != nil {
		if ctx.Err() != nil {
			return failed(c.cancelledBeforeSending())
		}
		return failed(c.unreachable())
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: info.name, Arguments: arguments})
	var wire *jsonrpc.Error
	switch {
	case err == nil && res.IsError:
		return failed(c.toolError(render(res)))
	case err == nil:
		return contract.ToolResult{Content: render(res), Changed: !c.readOnly}
	case ctx.Err() != nil:
		return failed(c.cancelled())
	case notSent(err):
		m.discard(s, cs)
		return failed(c.unreachable())
	case errors.As(err, &wire):
		return failed(c.refused(wire))
	default:
		m.discard(s, cs)
		return failed(c.broken())
	}
}

// codeRejected is the JSON-RPC code the SDK gives a request its transport could not deliver.
const codeRejected = -32005

// notSent reports whether err shows the request never reached the server: the transport rejected
// it, or the connection could not even be made.
func notSent(err error) bool {
	var wire *jsonrpc.Error
	if errors.As(err, &wire) && wire.Code == codeRejected {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// failed wraps feedback as an error result.
func failed(feedback string) contract.ToolResult {
	return contract.ToolResult{Content: feedback, IsError: true}
}

// objectArgs checks that args is a JSON object (empty text counts as {}) and returns it raw, so
// the server receives exactly what the model wrote.
func objectArgs(args string) (json.RawMessage, bool) {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage(`{}`), true
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) != nil || obj == nil {
		return nil, false
	}
	return json.RawMessage(args), true
}

// render turns a result's content into text for the model: text as is, other kinds as a short
// note, the structured content when nothing else came back.
func render(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch v := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, v.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[an image (%s) was returned and is not shown]", v.MIMEType))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio (%s) was returned and is not shown]", v.MIMEType))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s]", v.URI))
		case *sdk.EmbeddedResource:
			if v.Resource != nil && v.Resource.Text != "" {
				parts = append(parts, v.Resource.Text)
			} else if v.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s]", v.Resource.URI))
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	out := strings.Join(parts, "\n")
	if out == "" {
		return "(the tool returned no output)"
	}
	if len(out) > maxOutput {
		out = strings.ToValidUTF8(out[:maxOutput], "") + "\n[output cut here; it was longer]"
	}
	return out
}
