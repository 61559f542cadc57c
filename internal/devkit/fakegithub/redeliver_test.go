package fakegithub

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/go-github/v84/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRedeliver: a redelivery carries the first delivery's GUID and body, signed with the secret
// it is given, so a receiver can be shown the same delivery twice or a tampered copy of it.
func TestRedeliver(t *testing.T) {
	type got struct {
		id, sig string
		body    []byte
	}
	var mu sync.Mutex
	var seen []got
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, got{r.Header.Get(github.DeliveryIDHeader), r.Header.Get(github.SHA256SignatureHeader), b})
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	defer recv.Close()
	ctx := context.Background()
	first, err := Send(ctx, nil, recv.URL, "s3cret", "ping", map[string]string{"zen": "hi"})
	require.NoError(t, err)
	again, err := Redeliver(ctx, nil, recv.URL, "s3cret", first)
	require.NoError(t, err)
	forged, err := Redeliver(ctx, nil, recv.URL, "not-the-secret", first)
	require.NoError(t, err)
	assert.Equal(t, http.StatusAccepted, again.Status)
	assert.Equal(t, first.ID, again.ID)
	assert.Equal(t, first.ID, forged.ID)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 3)
	for i, g := range seen {
		assert.Equal(t, first.ID, g.id, "delivery %d", i)
		assert.Equal(t, first.Body, g.body, "delivery %d", i)
	}
	assert.Equal(t, seen[0].sig, seen[1].sig)
	assert.NoError(t, github.ValidateSignature(seen[1].sig, seen[1].body, []byte("s3cret")))
	assert.Error(t, github.ValidateSignature(seen[2].sig, seen[2].body, []byte("s3cret")))
}

// TestForkPullRequest: a pull request from a fork names the fork as its head repository and its
// own repository as the base, as GitHub does; one without HeadRepo has both the same.
func TestForkPullRequest(t *testing.T) {
	s, c := start(t, false)
	s.AddPR(testRepo, PR{Number: 8, Author: "mallory", HeadSHA: "def456", HeadRepo: "mallory/widgets"})
	ctx := context.Background()
	fork, _, err := c.PullRequests.Get(ctx, "acme", "widgets", 8)
	require.NoError(t, err)
	assert.Equal(t, "mallory/widgets", fork.GetHead().GetRepo().GetFullName())
	assert.Equal(t, testRepo, fork.GetBase().GetRepo().GetFullName())
	own, _, err := c.PullRequests.Get(ctx, "acme", "widgets", 7)
	require.NoError(t, err)
	assert.Equal(t, testRepo, own.GetHead().GetRepo().GetFullName())
}
