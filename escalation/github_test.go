package escalation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeGitHub serves the three REST endpoints the notifier uses, under a GitHub Enterprise style
// /api/v3 prefix, and checks the headers of every request.
type fakeGitHub struct {
	token    string
	mu       sync.Mutex
	comments []string
	labels   []string
	posts    int
	bad      []string
}

func (f *fakeGitHub) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v3/repos/acme/widgets/pulls/7", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"number":7,"user":{"login":"alice"}}`))
	})
	mux.HandleFunc("GET /api/v3/repos/acme/widgets/issues/7/comments", func(w http.ResponseWriter, r *http.Request) {
		per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		f.mu.Lock()
		defer f.mu.Unlock()
		out := []map[string]string{}
		for i := (page - 1) * per; i >= 0 && i < page*per && i < len(f.comments); i++ {
			out = append(out, map[string]string{"body": f.comments[i]})
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	mux.HandleFunc("POST /api/v3/repos/acme/widgets/issues/7/comments", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Body string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Body == "" {
			http.Error(w, "no body", http.StatusUnprocessableEntity)
			return
		}
		f.mu.Lock()
		f.comments = append(f.comments, in.Body)
		f.posts++
		f.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":1}`))
	})
	mux.HandleFunc("POST /api/v3/repos/acme/widgets/issues/7/labels", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Labels []string }
		_ = json.NewDecoder(r.Body).Decode(&in)
		f.mu.Lock()
		f.labels = append(f.labels, in.Labels...)
		f.mu.Unlock()
		_, _ = w.Write([]byte(`[]`))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+f.token {
			http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
			return
		}
		if r.Header.Get("Accept") != "application/vnd.github+json" || r.Header.Get("X-GitHub-Api-Version") == "" {
			f.mu.Lock()
			f.bad = append(f.bad, r.Method+" "+r.URL.Path)
			f.mu.Unlock()
		}
		mux.ServeHTTP(w, r)
	})
}

func TestGitHubNotifier(t *testing.T) {
	filler := make([]string, 100)
	for i := range filler {
		filler[i] = fmt.Sprintf("comment %d", i)
	}
	tests := []struct {
		name      string
		existing  []string
		wantPosts int
	}{
		{name: "fresh pull request gets one comment", wantPosts: 1},
		{name: "marker on the second page is found", existing: append(append([]string{}, filler...), "old\n"+GitHubMarker("esc-g1")), wantPosts: 0},
		{name: "other escalations do not count", existing: []string{GitHubMarker("esc-other")}, wantPosts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gh := &fakeGitHub{token: "ghp_test", comments: tt.existing}
			srv := httptest.NewServer(gh.handler())
			defer srv.Close()
			e := sampleEscalation("esc-g1")
			newNotifier := func() *GitHubNotifier {
				return &GitHubNotifier{BaseURL: srv.URL + "/api/v3/", Token: "ghp_test", Repo: "acme/widgets", PR: 7, HTTPClient: srv.Client()}
			}
			require.NoError(t, newNotifier().Notify(context.Background(), e))
			// A second notifier stands for a retried activity on another worker: the marker on
			// GitHub, not memory, keeps it from posting again.
			require.NoError(t, newNotifier().Notify(context.Background(), e))

			gh.mu.Lock()
			defer gh.mu.Unlock()
			assert.Empty(t, gh.bad, "requests without the GitHub headers")
			assert.Equal(t, tt.wantPosts, gh.posts)
			assert.Equal(t, []string{TriageLabel, TriageLabel}, gh.labels)
			if tt.wantPosts == 1 {
				c := gh.comments[len(gh.comments)-1]
				assert.Contains(t, c, "@alice ")
				assert.Contains(t, c, GitHubMarker("esc-g1"))
				assert.Contains(t, c, "`starter answer keel-0123456789abcdef0123 esc-g1 retry|edit|abort`")
				assert.Contains(t, c, "Last error: connection reset by peer")
			}
		})
	}
}

func TestGitHubNotifierBadToken(t *testing.T) {
	gh := &fakeGitHub{token: "right"}
	srv := httptest.NewServer(gh.handler())
	defer srv.Close()
	n := &GitHubNotifier{BaseURL: srv.URL + "/api/v3", Token: "wrong", Repo: "acme/widgets", PR: 7, HTTPClient: srv.Client()}
	err := n.Notify(context.Background(), sampleEscalation("esc-g2"))
	var se *StatusError
	require.True(t, errors.As(err, &se), "got %v", err)
	assert.Equal(t, http.StatusUnauthorized, se.Code)
	assert.True(t, se.Permanent())
	assert.Contains(t, err.Error(), "listing comments of acme/widgets#7")
	assert.Zero(t, gh.posts)
}
