package slackbot

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServeSlackBot(t *testing.T) {
	fs := newFakeSlack(t)
	ans := newRecordingAnswerer()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, RunConfig{SigningSecret: testSecret, BotToken: "xoxb-test", TeamID: testTeam,
			Approvers: []string{"U1"}, SlackAPIURL: fs.srv.GetAPIURL()}, ans, ln)
	}()

	form := url.Values{"command": {"/keel"}, "text": {"stop keel-abc"}, "team_id": {testTeam}, "user_id": {"U1"},
		"response_url": {fs.responseURL()}}.Encode()
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, err := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+CommandsPath, strings.NewReader(form))
	require.NoError(t, err)
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", "v0="+hmacHex(testSecret, "v0:"+ts+":"+form))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))

	rep := receive(t, fs.replies, "stop reply")
	assert.Contains(t, rep.Text, "Stop sent to `keel-abc`")
	cancel()
	require.NoError(t, receive(t, done, "server shutdown"))
	_, c, _ := ans.calls()
	assert.Equal(t, 1, c)

	// A refused configuration is an error, not a server that lets everyone in.
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	err = Serve(context.Background(), RunConfig{SigningSecret: testSecret, BotToken: "x", TeamID: testTeam}, ans, ln2)
	assert.ErrorContains(t, err, "approver list is empty")
}
