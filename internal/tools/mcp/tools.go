package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// maxNameLen is the longest tool name every provider accepts.
const maxNameLen = 64

// listed is one tool as a server listed it.
type listed struct {
	server string
	tool   *sdk.Tool
}

// Tools lists the tools of every configured server, in configuration order and then in the order
// each server lists them, as specs whose Server field names the server. A tool keeps its own name
// unless that name is served by two servers or is the name of a built-in tool; then it is exposed
// as "<server>__<tool>" (characters providers reject become "_"), and Call maps it back. A server
// that cannot be reached is left out: the specs of the others come back together with an error
// naming what failed, for the operator's log.
func (m *Manager) Tools(ctx context.Context) ([]contract.ToolSpec, error) {
	var all []listed
	var answered []string
	var errs []error
	for _, s := range m.servers {
		tools, err := m.list(ctx, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		answered = append(answered, s.cfg.Name)
		for _, t := range tools {
			all = append(all, listed{server: s.cfg.Name, tool: t})
		}
	}
	specs, names := expose(all)
	m.mu.Lock()
	for _, server := range answered {
		m.names[server] = names[server]
		if m.names[server] == nil {
			m.names[server] = map[string]toolInfo{}
		}
	}
	m.mu.Unlock()
	return specs, errors.Join(errs...)
}

// list fetches every tool of one server, following pagination.
func (m *Manager) list(ctx context.Context, s *server) ([]*sdk.Tool, error) {
	cs, err := m.session(ctx, s)
	if err != nil {
		return nil, err
	}
	var out []*sdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			m.discard(s, cs)
			return nil, fmt.Errorf("listing the tools of MCP server %s: %w", s.cfg.Name, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// expose names every listed tool for the model and returns the specs together with, per server,
// the map from exposed name back to the tool.
func expose(all []listed) ([]contract.ToolSpec, map[string]map[string]toolInfo) {
	servedBy := map[string]map[string]bool{}
	for _, l := range all {
		if servedBy[l.tool.Name] == nil {
			servedBy[l.tool.Name] = map[string]bool{}
		}
		servedBy[l.tool.Name][l.server] = true
	}
	taken := map[string]bool{}
	for _, b := range toolspec.Builtin() {
		taken[b.Name] = true
	}
	specs := make([]contract.ToolSpec, 0, len(all))
	names := map[string]map[string]toolInfo{}
	for _, l := range all {
		name := l.tool.Name
		if len(servedBy[name]) > 1 || taken[name] {
			name = l.server + "__" + name
		}
		name = unique(clean(name), taken)
		taken[name] = true
		info := toolInfo{name: l.tool.Name, readOnly: l.tool.Annotations != nil && l.tool.Annotations.ReadOnlyHint}
		if names[l.server] == nil {
			names[l.server] = map[string]toolInfo{}
		}
		names[l.server][name] = info
		specs = append(specs, contract.ToolSpec{
			Name:        name,
			Description: l.tool.Description,
			Parameters:  schema(l.tool.InputSchema),
			Writes:      !info.readOnly,
			Server:      l.server,
		})
	}
	return specs, names
}

// clean makes name acceptable to every provider: letters, digits, "_" and "-", at most 64 bytes.
func clean(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := b.String()
	if out == "" {
		out = "tool"
	}
	if len(out) > maxNameLen {
		out = out[:maxNameLen]
	}
	return out
}

// unique appends _2, _3, ... to name until it is not taken.
func unique(name string, taken map[string]bool) string {
	if !taken[name] {
		return name
	}
	for i := 2; ; i++ {
		suffix := "_" + strconv.Itoa(i)
		base := name
		if len(base)+len(suffix) > maxNameLen {
			base = base[:maxNameLen-len(suffix)]
		}
		if !taken[base+suffix] {
			return base + suffix
		}
	}
}

// schema renders a tool's input schema as JSON, or an open object schema when there is none.
// The client holds it as a map, which encoding/json writes with sorted keys, so the bytes are
// stable from one listing to the next.
func schema(in any) []byte {
	if in != nil {
		if b, err := json.Marshal(in); err == nil && string(b) != "null" {
			return b
		}
	}
	return []byte(`{"type":"object"}`)
}

// resolve maps the name the model used back to the tool on the server. A name never listed is
// passed on unchanged; known says whether the listing knew it.
func (m *Manager) resolve(server, name string) (info toolInfo, known bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if info, ok := m.names[server][name]; ok {
		return info, true
	}
	return toolInfo{name: name}, false
}

// listed reports whether server's tools have been listed.
func (m *Manager) listed(server string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.names[server]
	return ok
}
