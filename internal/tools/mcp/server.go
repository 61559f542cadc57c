package mcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// terminateWait is how long a stdio server gets after its input closes, and again after SIGTERM,
// before it is killed.
const terminateWait = 2 * time.Second

// server is one configured MCP server and its connection, if one is open.
type server struct {
	cfg  ServerConfig
	home *homeDir
	// lock serialises connecting; it is a channel so a caller can give up waiting when its
	// context ends.
	lock chan struct{}

	mu      sync.Mutex
	current *sdk.ClientSession
	dead    chan struct{} // closed when current's connection ends
}

func newServer(cfg ServerConfig, home *homeDir) *server {
	return &server{cfg: cfg, home: home, lock: make(chan struct{}, 1)}
}

// session returns the open session, or connects a new one when there is none or it has died.
func (s *server) session(ctx context.Context, client *sdk.Client) (*sdk.ClientSession, error) {
	select {
	case s.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.lock }()
	if cs := s.live(); cs != nil {
		return cs, nil
	}
	transport, stderr, err := s.transport()
	if err != nil {
		return nil, err
	}
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting to MCP server %s: %w%s", s.cfg.Name, err, stderr.suffix())
	}
	dead := make(chan struct{})
	go func() {
		_ = cs.Wait()
		close(dead)
	}()
	s.mu.Lock()
	s.current, s.dead = cs, dead
	s.mu.Unlock()
	return cs, nil
}

// live returns the current session if its connection is still up.
func (s *server) live() *sdk.ClientSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == nil {
		return nil
	}
	select {
	case <-s.dead:
		s.current = nil
		return nil
	default:
		return s.current
	}
}

// forget drops cs if it is still the current session and reports whether it was.
func (s *server) forget(cs *sdk.ClientSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current != cs {
		return false
	}
	s.current = nil
	return true
}

// close closes the current session, if any.
func (s *server) close() error {
	s.mu.Lock()
	cs := s.current
	s.current = nil
	s.mu.Unlock()
	if cs == nil {
		return nil
	}
	err := cs.Close()
	var exit *exec.ExitError
	var op *net.OpError
	switch {
	case errors.As(err, &exit):
		return nil // a server that exits non-zero on shutdown has still shut down
	case errors.As(err, &op) && op.Op == "dial":
		return nil // a server that is already gone needs no goodbye
	}
	return err
}

// transport builds the transport the config asks for; stderr collects a stdio server's last words
// for the operator's error messages.
func (s *server) transport() (sdk.Transport, *tailBuffer, error) {
	switch {
	case len(s.cfg.Command) > 0 && s.cfg.URL != "":
		return nil, nil, fmt.Errorf("MCP server %s has both a command and a URL; configure one", s.cfg.Name)
	case len(s.cfg.Command) > 0:
		dir := s.cfg.Dir
		if dir == "" {
			var err error
			if dir, err = s.home.get(); err != nil {
				return nil, nil, err
			}
		}
		cmd := exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...)
		cmd.Dir = dir
		cmd.Env = serverEnv(os.Environ(), s.cfg.Env)
		tail := &tailBuffer{}
		cmd.Stderr = tail
		cmd.WaitDelay = terminateWait // a grandchild holding stderr open must not stall Close
		return &sdk.CommandTransport{Command: cmd, TerminateDuration: terminateWait}, tail, nil
	case s.cfg.URL != "":
		return &sdk.StreamableClientTransport{
			Endpoint:             s.cfg.URL,
			HTTPClient:           &http.Client{},
			MaxRetries:           -1, // one attempt: the breaker, not the transport, decides about retrying
			DisableStandaloneSSE: true,
		}, nil, nil
	}
	return nil, nil, fmt.Errorf("MCP server %s has neither a command nor a URL", s.cfg.Name)
}

// passedEnv are the worker's variables a stdio server inherits, when set: enough to find programs
// and run toolchains, none of the worker's credentials.
var passedEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR",
	"GOPATH", "GOROOT", "GOCACHE", "GOMODCACHE", "GOFLAGS", "GOTOOLCHAIN", "GOPROXY", "GOSUMDB",
	"GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOINSECURE", "GOTMPDIR", "GOENV", "CGO_ENABLED",
}

// serverEnv is the passed part of environ followed by the configured pairs, which win.
func serverEnv(environ, extra []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		for _, p := range passedEnv {
			if name == p {
				out = append(out, kv)
				break
			}
		}
	}
	return append(out, extra...)
}

// tailBuffer keeps the last few hundred bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 512

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > tailSize {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-tailSize:]...)
	}
	return len(p), nil
}

// suffix renders what the server wrote to stderr for an error message, or "" when nothing.
func (b *tailBuffer) suffix() string {
	if b == nil {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if t := strings.TrimSpace(string(b.buf)); t != "" {
		return " (server stderr: " + t + ")"
	}
	return ""
}
