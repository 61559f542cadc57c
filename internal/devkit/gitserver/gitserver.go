// Package gitserver serves bare git repositories over HTTP on loopback for tests: git's own
// http-backend behind net/http/cgi, optionally behind a token that must arrive as basic auth, and
// it records every request so a test can tell what a client fetched and pushed.
package gitserver

import (
	"crypto/subtle"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Server serves the bare repositories under Root at URL/NAME.git.
type Server struct {
	// Root holds the bare repositories.
	Root string
	// URL is the server's base URL, http://127.0.0.1:PORT.
	URL string

	token string
	mu    sync.Mutex
	auths []string
	reqs  []string
}

// Start serves root on a loopback port until the test ends. With a token, every request must
// carry it as basic auth (any user name), as GitHub takes one.
func Start(t testing.TB, root, token string) *Server {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("finding git's exec path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	s := &Server{Root: root, token: token}
	h := &cgi.Handler{Path: backend, Stderr: io.Discard, Env: []string{
		"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + root,
		"GIT_CONFIG_GLOBAL=/dev/null", "REMOTE_USER=keel-test",
	}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.auths = append(s.auths, r.Header.Get("Authorization"))
		s.reqs = append(s.reqs, r.Method+" "+r.URL.RequestURI())
		s.mu.Unlock()
		if s.token != "" && !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	s.URL = "http://" + ln.Addr().String()
	return s
}

func (s *Server) authorized(r *http.Request) bool {
	_, pass, ok := r.BasicAuth()
	return ok && subtle.ConstantTimeCompare([]byte(pass), []byte(s.token)) == 1
}

// Requests are the requests served so far, "METHOD /path?query".
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...)
}

// BasicAuthSeen says whether any request carried the token.
func (s *Server) BasicAuthSeen() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + s.token))
	for _, a := range s.auths {
		if a == "Basic "+want {
			return true
		}
	}
	return false
}

// Repo makes a bare repository NAME.git under Root that accepts pushes, and returns its URL.
func (s *Server) Repo(t testing.TB, name string) (dir, url string) {
	t.Helper()
	dir = filepath.Join(s.Root, name+".git")
	Git(t, "", "init", "--quiet", "--bare", "-b", "main", dir)
	Git(t, dir, "config", "http.receivepack", "true")
	return dir, s.URL + "/" + name + ".git"
}

// Git runs git for a test in dir with the test's own identity and no user configuration, and
// returns its trimmed output.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_COMMITTER_NAME=test",
		"GIT_COMMITTER_EMAIL=test@example.com", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
