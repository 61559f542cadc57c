package mcp

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// maxDetail caps the server's own words quoted in feedback.
const maxDetail = 300

// call names the call that feedback is about.
type call struct {
	server, tool string
	// readOnly is true only when the server's listing said the tool changes nothing.
	readOnly bool
}

// outcome says what an interrupted or failed call may have done, and what to do about it.
func (c call) outcome() string {
	if c.readOnly {
		return "It only reads, so nothing changed; retry as is, or use another tool."
	}
	return "It may or may not have changed something; check the state it works on before calling it again."
}

func (c call) toolError(text string) string {
	return fmt.Sprintf("The tool %s (MCP server %q) reported a failure (%s). ", c.tool, c.server, detail(text)) +
		c.errorNext()
}

func (c call) errorNext() string {
	if c.readOnly {
		return "It only reads, so nothing changed. Fix the arguments if the message is about them; otherwise try another tool or continue without it."
	}
	return "It may or may not have changed something before it failed; check the state it works on before calling it again, or use another tool."
}

func (c call) unreachable() string {
	return fmt.Sprintf("The MCP server %q that serves %s could not be reached, so the call was not run and nothing changed. "+
		"Retry later, or use another tool.", c.server, c.tool)
}

func (c call) broken() string {
	return fmt.Sprintf("The connection to the MCP server %q broke during the call to %s, so its outcome is unknown. ", c.server, c.tool) +
		c.outcome()
}

func (c call) cancelled() string {
	return fmt.Sprintf("The call to %s was cancelled before it finished, so its outcome is unknown. ", c.tool) + c.outcome()
}

func (c call) cancelledBeforeSending() string {
	return fmt.Sprintf("The call to %s was cancelled before it was sent; nothing was run and nothing changed. "+
		"Send it again if it is still needed.", c.tool)
}

// refused answers a JSON-RPC error. Unknown methods and invalid parameters (an unknown tool,
// arguments the server rejects) are refused before the tool runs; other errors may come from a
// tool that had started.
func (c call) refused(e *jsonrpc.Error) string {
	if e.Code == jsonrpc.CodeInvalidParams || e.Code == jsonrpc.CodeMethodNotFound {
		return fmt.Sprintf("The MCP server %q refused the call to %s (%s), so it was not run and nothing changed. "+
			"Check the arguments against the tool's description and send it again, or use another tool.",
			c.server, c.tool, detail(e.Message))
	}
	return fmt.Sprintf("The MCP server %q answered the call to %s with an error (%s). ", c.server, c.tool, detail(e.Message)) +
		c.outcome()
}

func (c call) badArgs() string {
	return fmt.Sprintf("The arguments for %s are not a JSON object, so the call was not run and nothing changed. "+
		"Send the call again with a JSON object as its arguments.", c.tool)
}

func noServerFeedback(server, tool string) string {
	return fmt.Sprintf("There is no MCP server named %q, so the call to %s was not run and nothing changed. "+
		"Use one of the tools you were given instead.", server, tool)
}

// jsonPointer finds a JSON Pointer into a schema ("/properties/text"), which schema validators put
// in their messages and which reads like a file path.
var jsonPointer = regexp.MustCompile(`(^|[\s("'])/((properties|items|prefixItems|additionalProperties|\$defs|definitions|required|type)\b)`)

// detail makes a server's message fit inside a sentence of feedback: one line, no "a: b: c"
// chains, schema locations without their leading slash, at most maxDetail bytes.
func detail(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, ": ", " - ")
	s = jsonPointer.ReplaceAllString(s, "${1}${2}")
	s = strings.TrimRight(s, ". ")
	if len(s) > maxDetail {
		s = strings.ToValidUTF8(s[:maxDetail], "") + "…"
	}
	if s == "" {
		return "no message"
	}
	return s
}
