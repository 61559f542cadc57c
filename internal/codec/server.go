package codec

import (
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"

	"go.temporal.io/sdk/converter"
)

// ServerOptions configure the codec server.
type ServerOptions struct {
	// Token, when set, must come as "Authorization: Bearer <token>" (or the bare token, as the
	// Web UI passes its own access token) on every request; without it the server answers 401.
	Token string
	// Origins are the browser origins allowed to call the server (the Web UI's, such as
	// http://127.0.0.1:8233); "*" allows any.
	Origins []string
}

// Handler is the codec server Temporal documents: POST /encode and POST /decode with
// {"payloads": [...]}, CORS for the Web UI's origin and an authorization check, so the Web UI and
// `temporal workflow show --codec-endpoint` show plaintext to those who hold the token.
func (r *Keyring) Handler(opts ServerOptions) http.Handler {
	inner := converter.NewPayloadCodecHTTPHandler(r)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		allowOrigin(w, req, opts.Origins)
		if req.Method == http.MethodOptions {
			w.WriteHeader(http.StatusOK)
			return
		}
		if !authorized(req, opts.Token) {
			http.Error(w, "unauthorized: send the codec server's token (codec.token) as Authorization: Bearer <token>", http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, req)
	})
}

// allowOrigin answers CORS for an allowed origin: the Web UI calls the codec server from the
// browser, sending its namespace and, when configured, the user's credentials.
func allowOrigin(w http.ResponseWriter, req *http.Request, origins []string) {
	origin := req.Header.Get("Origin")
	if origin == "" || (!slices.Contains(origins, "*") && !slices.Contains(origins, strings.TrimSuffix(origin, "/"))) {
		return
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Credentials", "true")
	h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization")
	h.Add("Vary", "Origin")
}

// authorized compares the request's token with the configured one in constant time.
func authorized(req *http.Request, token string) bool {
	if token == "" {
		return true
	}
	got := strings.TrimSpace(strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer "))
	return subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}
