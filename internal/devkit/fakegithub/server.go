// Package fakegithub is a local server speaking the part of GitHub's REST API that Keel uses, so
// tests and demos run the real go-github client against loopback instead of github.com: issue
// comments (list with pagination, get, create, update, delete), labels (add), pull requests (get,
// list files), the token's user, a collaborator's permission, reactions on issue comments and team membership. The
// JSON is go-github's own types, so what the client decodes here it decodes from GitHub.
//
// A test seeds the state (AddPR, SetPermission, AddTeamMember, AddComment), points a client at
// URL (go-github: NewClient(nil).WithAuthToken(token) with BaseURL set to URL, or
// WithEnterpriseURLs(BaseURL(), BaseURL()): both the root and the /api/v3/ prefix are served),
// then reads what the client did (Comments, Labels, Reactions, Requests). Send delivers webhooks
// signed the way GitHub signs them.
package fakegithub

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// DefaultLogin is the login the token acts as when Options.Login is empty.
const DefaultLogin = "keel-bot"

// enterprisePrefix is where GitHub Enterprise Server serves its REST API; go-github's
// WithEnterpriseURLs appends it, so the fake serves under it as well as at the root.
const enterprisePrefix = "/api/v3"

// Options configure a fake server.
type Options struct {
	// Token is the one token accepted, as "Authorization: Bearer TOKEN" (or GitHub's older
	// "token TOKEN"). Empty accepts any request, with or without a token.
	Token string
	// Login is the user the token acts as: the author of the comments and reactions it creates.
	// Empty means DefaultLogin.
	Login string
	// NoUser makes GET /user answer 403 as it does for a GitHub App's installation token, whose
	// login the client must be told.
	NoUser bool
}

// Request is one request the server received, for tests that check what a client did.
type Request struct {
	Method string
	// Path is the URL path without the /api/v3 prefix and without the query.
	Path  string
	Query string
	// Status is the HTTP status the server answered with.
	Status int
}

// Server is the fake GitHub. Create it with Start; it is safe for concurrent use.
type Server struct {
	opts Options
	ln   net.Listener
	srv  *http.Server
	mux  *http.ServeMux

	mu       sync.Mutex
	state    state
	requests []Request
	faults   []fault
}

// fault is a queued failure for the next matching requests.
type fault struct {
	method, path string
	status       int
	left         int
}

// Start serves a fake GitHub on a loopback port until Close.
func Start(opts Options) (*Server, error) {
	if opts.Login == "" {
		opts.Login = DefaultLogin
	}
	s := &Server{opts: opts, state: newState()}
	s.mux = http.NewServeMux()
	s.routes()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the fake GitHub: %w", err)
	}
	s.ln = ln
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// BaseURL is "http://127.0.0.1:PORT", without a trailing slash.
func (s *Server) BaseURL() string { return "http://" + s.ln.Addr().String() }

// URL is the REST API root with the trailing slash go-github's Client.BaseURL needs.
func (s *Server) URL() string { return s.BaseURL() + "/" }

// EnterpriseURL is the API root the way GitHub Enterprise Server spells it: BaseURL()+"/api/v3/".
func (s *Server) EnterpriseURL() string { return s.BaseURL() + enterprisePrefix + "/" }

// Login is the user the server's token acts as.
func (s *Server) Login() string { return s.opts.Login }

// Close stops the server.
func (s *Server) Close() error {
	if err := s.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("closing the fake GitHub: %w", err)
	}
	return nil
}

// FailNext makes the next n requests with this method and path (without /api/v3, e.g.
// "/repos/acme/app/issues/7/labels") answer with status and GitHub's error body instead of
// being served, so a test can see a client retry.
func (s *Server) FailNext(method, path string, status, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, fault{method: method, path: path, status: status, left: n})
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Unauthorized counts the requests refused for a missing or wrong token.
func (s *Server) Unauthorized() int {
	n := 0
	for _, r := range s.Requests() {
		if r.Status == http.StatusUnauthorized {
			n++
		}
	}
	return n
}

// ServeHTTP checks the token, applies queued faults, records the request and routes it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p, ok := strings.CutPrefix(r.URL.Path, enterprisePrefix); ok && (p == "" || p[0] == '/') {
		r.URL.Path = p
		r.URL.RawPath = ""
	}
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Status: rec.status})
		s.mu.Unlock()
	}()
	if !s.authorized(r) {
		writeError(rec, http.StatusUnauthorized, "Bad credentials")
		return
	}
	if status := s.takeFault(r.Method, r.URL.Path); status != 0 {
		writeError(rec, status, http.StatusText(status))
		return
	}
	s.mux.ServeHTTP(rec, r)
}

func (s *Server) authorized(r *http.Request) bool {
	if s.opts.Token == "" {
		return true
	}
	h := r.Header.Get("Authorization")
	return h == "Bearer "+s.opts.Token || h == "token "+s.opts.Token
}

func (s *Server) takeFault(method, path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.faults {
		f := &s.faults[i]
		if f.left > 0 && f.method == method && f.path == path {
			f.left--
			return f.status
		}
	}
	return 0
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}
