// Package mcp connects Keel to tools served by MCP servers, over stdio or streamable HTTP. A
// Manager lists the servers' tools as contract.ToolSpecs and runs one call at a time as a single
// attempt, turning every failure into a contract.ToolResult the model can act on: it says whether
// anything changed and what to do next, and carries no Go error text.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerConfig names one MCP server and says how to reach it: Command (program and arguments,
// spoken to over stdio) or URL (streamable HTTP). Env adds KEY=VALUE pairs to a stdio server's
// environment, which otherwise holds only a few harmless variables of the worker's. Dir is the
// stdio server's working directory; empty, it is an empty folder of the worker's own, never the
// worker's working directory, which may be a session's work directory: `python3 -m NAME` and
// `npx` look for what they run in the working directory first, where a model could have put it.
type ServerConfig struct {
	Name    string   `json:"name" mapstructure:"name"`
	Command []string `json:"command,omitempty" mapstructure:"command"`
	URL     string   `json:"url,omitempty" mapstructure:"url"`
	Env     []string `json:"env,omitempty" mapstructure:"env"`
	Dir     string   `json:"dir,omitempty" mapstructure:"dir"`
}

// Manager holds the connections to the configured MCP servers. Connections are opened on first
// use and kept, so a worker pays for starting a server once, not per call; a connection that has
// died is opened again on the next use. A Manager is safe for concurrent use.
type Manager struct {
	client  *sdk.Client
	servers []*server
	closing sync.WaitGroup
	home    *homeDir

	mu     sync.Mutex
	names  map[string]map[string]toolInfo // server name -> exposed tool name -> tool
	closed bool
}

// toolInfo is what a listing taught the manager about one tool.
type toolInfo struct {
	name     string // the tool's name on its server
	readOnly bool   // the server says the tool changes nothing
}

// NewManager returns a manager for servers. It connects to nothing until a tool is listed or
// called.
func NewManager(servers []ServerConfig) *Manager {
	m := &Manager{
		client: sdk.NewClient(&sdk.Implementation{Name: "keel", Version: "1"}, nil),
		names:  map[string]map[string]toolInfo{},
		home:   &homeDir{},
	}
	for _, cfg := range servers {
		if len(cfg.Command) > 0 && strings.ContainsRune(cfg.Command[0], filepath.Separator) && !filepath.IsAbs(cfg.Command[0]) {
			// A relative program is the worker's, found from its working directory, as before
			// the server got a directory of its own.
			if abs, err := filepath.Abs(cfg.Command[0]); err == nil {
				cfg.Command = append([]string{abs}, cfg.Command[1:]...)
			}
		}
		m.servers = append(m.servers, newServer(cfg, m.home))
	}
	return m
}

// homeDir is the empty folder of the worker's own where stdio servers without a configured Dir
// start, made on first use and removed by Close.
type homeDir struct {
	mu   sync.Mutex
	path string
}

// get makes the folder the first time and returns it.
func (h *homeDir) get() (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.path == "" {
		dir, err := os.MkdirTemp("", "keel-mcp-")
		if err != nil {
			return "", fmt.Errorf("creating the MCP servers' working directory: %w", err)
		}
		h.path = dir
	}
	return h.path, nil
}

// remove removes the folder, if it was made.
func (h *homeDir) remove() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.path != "" {
		_ = os.RemoveAll(h.path)
		h.path = ""
	}
}

// Servers returns the configured server names, in configuration order.
func (m *Manager) Servers() []string {
	out := make([]string, 0, len(m.servers))
	for _, s := range m.servers {
		out = append(out, s.cfg.Name)
	}
	return out
}

// lookup returns the server named name, or nil.
func (m *Manager) lookup(name string) *server {
	for _, s := range m.servers {
		if s.cfg.Name == name {
			return s
		}
	}
	return nil
}

// session returns an open session to s, connecting if needed; it fails once the manager is closed.
func (m *Manager) session(ctx context.Context, s *server) (*sdk.ClientSession, error) {
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, errors.New("the MCP manager is closed")
	}
	return s.session(ctx, m.client)
}

// discard closes a session that failed under a call, without making the caller wait for it.
func (m *Manager) discard(s *server, cs *sdk.ClientSession) {
	if !s.forget(cs) {
		return
	}
	m.closing.Add(1)
	go func() {
		defer m.closing.Done()
		_ = cs.Close()
	}()
}

// Close closes every open connection (a stdio server gets its input closed, then SIGTERM and
// SIGKILL if it lingers) and waits for them to finish. Calls after Close answer that the server
// could not be reached.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	var errs []error
	for _, s := range m.servers {
		if err := s.close(); err != nil {
			errs = append(errs, fmt.Errorf("closing MCP server %s: %w", s.cfg.Name, err))
		}
	}
	m.closing.Wait()
	m.home.remove()
	return errors.Join(errs...)
}
