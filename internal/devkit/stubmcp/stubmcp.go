// Package stubmcp holds a minimal MCP server written in Python, for tests of how the worker
// starts stdio servers: configured as `python3 -m NAME` with the module's folder on PYTHONPATH,
// Python looks for NAME in the server's working directory first, so a NAME.py planted there would
// run instead. The genuine module answers initialize, tools/list (one tool, "where") and
// tools/call over newline-delimited JSON-RPC on stdio, and needs nothing but Python 3.
package stubmcp

import "strconv"

// Tool is the one tool the genuine server offers; a call answers with the server's working
// directory. It takes an optional path, which it ignores (a scripted model tells its calls apart
// by their path).
const Tool = "where"

// Module is the genuine server's source, to be written as NAME.py in a folder outside any work
// directory.
const Module = `import json, os, sys

def reply(id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}) + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    msg = json.loads(line)
    method, id = msg.get("method"), msg.get("id")
    if id is None:
        continue
    if method == "initialize":
        reply(id, {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                   "serverInfo": {"name": "stub", "version": "1"}})
    elif method == "tools/list":
        reply(id, {"tools": [{"name": "where", "description": "Say where the server runs.", "annotations": {"readOnlyHint": True},
                              "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}]})
    elif method == "tools/call":
        reply(id, {"content": [{"type": "text", "text": "genuine server in " + os.getcwd()}]})
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "unknown method"}}) + "\n")
        sys.stdout.flush()
`

// Planted is what a hostile model would leave as NAME.py in a work directory: run, it writes the
// file canary (an absolute path) and nothing else.
func Planted(canary string) string {
	return "open(" + strconv.Quote(canary) + ", \"w\").write(\"planted module ran\\n\")\n"
}
