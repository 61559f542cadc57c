package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/proxy"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/keelrun/keel/internal/app"
	"github.com/keelrun/keel/internal/codec"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/connect"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/demo"
)

// TestEncryptedSessions runs a session with codec.keys set. No event of its histories (read raw,
// without the codec) and no file of the store holds the task, the file content the model wrote
// or a command's output; the codec server decodes them for whoever holds its token. After a
// rotation (a new key first, the old one behind it) a new session is encrypted with the new key
// and the old session still decodes, while a ring without the old key cannot.
func TestEncryptedSessions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Setenv("KEEL_TEST_CODEC_K1", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x11}, codec.KeySize)))
	t.Setenv("KEEL_TEST_CODEC_K2", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x22}, codec.KeySize)))
	gateway := startGateway(t) + "/v1"
	cfg1 := env.Config(t, map[string]any{config.CodecKeys: []string{"k1=env:KEEL_TEST_CODEC_K1"}})
	first := runEncrypted(ctx, t, cfg1, gateway, "fix the failing test (ticket zebra-quokka-7781)")

	secrets := append([]string{"zebra-quokka-7781", demo.FixedLine}, first.output...)
	if len(secrets) < 3 {
		t.Fatalf("the session ran no command with output to look for: %v", secrets)
	}
	for _, p := range first.raw {
		for _, s := range secrets {
			if bytes.Contains(p, []byte(s)) {
				t.Fatalf("the raw history holds %q", s)
			}
		}
	}
	files := 0
	err := filepath.Walk(cfg1.Store.Path, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(path)
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("store file %s holds %q", path, s)
			}
		}
		return err
	})
	if err != nil || files == 0 {
		t.Fatalf("walking the store (%d files): %v", files, err)
	}

	// The rotation: k2 encrypts from now on, k1 still decrypts.
	cfg2 := cfg1
	cfg2.Codec.Keys = []string{"k2=env:KEEL_TEST_CODEC_K2", "k1=env:KEEL_TEST_CODEC_K1"}
	second := runEncrypted(ctx, t, cfg2, gateway, "fix the failing test (ticket otter-lemur-5512)")
	if second.keyIDs["k2"] == 0 || second.keyIDs["k1"] != 0 || first.keyIDs["k1"] == 0 {
		t.Fatalf("key IDs in the histories: first %v, second %v", first.keyIDs, second.keyIDs)
	}
	rotated, err := connect.Keys(cfg2, connect.OSEnv)
	if err != nil {
		t.Fatal(err)
	}
	newOnly, err := codec.NewKeyring(codec.Key{ID: "k2", Secret: bytes.Repeat([]byte{0x22}, codec.KeySize)})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		ring   *codec.Keyring
		token  string
		in     []*commonpb.Payload
		want   []string
		status int
	}{
		{"old session, rotated ring", rotated, "tok", first.payloads, secrets, http.StatusOK},
		{"new session, rotated ring", rotated, "tok", second.payloads, []string{"otter-lemur-5512"}, http.StatusOK},
		{"old session without its key", newOnly, "tok", first.payloads, nil, http.StatusBadRequest},
		{"no token", rotated, "", first.payloads, nil, http.StatusUnauthorized},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(c.ring.Handler(codec.ServerOptions{Token: "tok", Origins: []string{cfg1.Temporal.UIURL}}))
			defer srv.Close()
			status, decoded := decodeVia(t, srv.URL, c.token, c.in)
			if status != c.status {
				t.Fatalf("status %d, want %d", status, c.status)
			}
			for _, s := range c.want {
				if !strings.Contains(decoded, s) {
					t.Errorf("the codec server's answer lacks %q", s)
				}
			}
		})
	}
	// `temporal workflow show` prints the task only through the codec server, with its token.
	codecSrv := httptest.NewServer(rotated.Handler(codec.ServerOptions{Token: "tok"}))
	defer codecSrv.Close()
	show := func(args ...string) string {
		cmd := exec.CommandContext(ctx, temporalCLI, append([]string{"workflow", "show", "-w", first.id, "--address", env.Address(), "-o", "json"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("temporal workflow show %v: %v\n%s", args, err, out)
		}
		return payloadTexts(string(out))
	}
	if out := show(); strings.Contains(out, "zebra-quokka-7781") || !strings.Contains(out, codec.Encoding) {
		t.Errorf("without the codec endpoint the history shows the task, or no encrypted payload")
	}
	if out := show("--codec-endpoint", codecSrv.URL, "--codec-auth", "Bearer tok"); !strings.Contains(out, "zebra-quokka-7781") {
		t.Errorf("with the codec endpoint the history lacks the task:\n%s", lastBytes(out, 2000))
	}

	// The old transcript still loads from the store through the rotated ring.
	st, err := app.OpenStore(ctx, cfg2)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := st.Load(ctx, first.head)
	found := false
	for _, m := range msgs {
		found = found || strings.Contains(m.Content, "zebra-quokka-7781")
	}
	if err != nil || !found {
		t.Fatalf("the old transcript through the rotated ring: %d messages without the task, %v", len(msgs), err)
	}
}

// encryptedRun is what one session left in Temporal, read without the codec.
type encryptedRun struct {
	raw      [][]byte            // every history event, marshalled
	payloads []*commonpb.Payload // every payload of those events
	keyIDs   map[string]int      // payloads per key ID
	output   []string            // lines of its commands' output, as the model was told them
	head     string              // the transcript head of the last turn
	id       string              // the session's workflow ID
}

// runEncrypted runs one demo session with cfg's keys through an in-process worker and reads its
// histories raw.
func runEncrypted(ctx context.Context, t *testing.T, cfg config.Config, gateway, task string) encryptedRun {
	t.Helper()
	c, err := app.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stop, err := app.StartWorker(ctx, c, cfg, gateway)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ws := t.TempDir()
	if err := demo.CopyWorkspace(ws); err != nil {
		t.Fatal(err)
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: cfg.Temporal.TaskQueue}, contract.SessionWorkflow,
		scriptedInput(contract.SessionInput{Task: task, Settings: contract.Settings{ToolSettings: contract.ToolSettings{Workdir: ws}}, Limits: contract.Limits{MaxTurns: 20}}))
	if err != nil {
		t.Fatal(err)
	}
	var sum contract.Summary
	if err := run.Get(ctx, &sum); err != nil || sum.Status != contract.StatusCompleted {
		t.Fatalf("summary %+v, %v", sum, err)
	}
	out := encryptedRun{keyIDs: map[string]int{}, id: run.GetID()}
	ids := []string{run.GetID()}
	for n := 1; n <= sum.Turns; n++ {
		id := contract.TurnWorkflowID(run.GetID(), n)
		ids = append(ids, id)
		var res contract.TurnResult
		if err := c.GetWorkflow(ctx, id, "").Get(ctx, &res); err != nil {
			t.Fatal(err)
		}
		out.head = res.Head
		for _, m := range res.Pending {
			if m.Role == contract.RoleTool && m.Name == "run_command" {
				out.output = append(out.output, outputLines(m.Content)...)
			}
		}
	}
	// The programs' own raw reads (attempts, watch, list) see the history decrypted.
	seen := false
	it := c.GetWorkflowHistory(ctx, run.GetID(), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := proto.Marshal(ev)
		seen = seen || bytes.Contains(b, []byte(task))
	}
	if !seen {
		t.Fatal("the history read through a client with the keys does not show the task")
	}
	raw := env.Client() // no codec: what the server and its operators see
	for _, id := range ids {
		it := raw.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			b, err := proto.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			out.raw = append(out.raw, b)
			err = proxy.VisitPayloads(ctx, ev, proxy.VisitPayloadsOptions{SkipSearchAttributes: true,
				Visitor: func(_ *proxy.VisitPayloadsContext, ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
					for _, p := range ps {
						out.payloads = append(out.payloads, p)
						out.keyIDs[string(p.GetMetadata()[codec.MetadataKey])]++
					}
					return ps, nil
				}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// outputLines are the lines of a command's result worth searching for: long enough to be
// particular, and without characters JSON would escape.
func outputLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if len(l) >= 16 && !strings.ContainsAny(l, "\t\"\\<>&") {
			out = append(out, l)
		}
	}
	return out
}

// payloadData matches the base64 fields of a history printed as JSON: payloads' data and metadata.
var payloadData = regexp.MustCompile(`"(?:data|encoding|encryption-key-id)":\s*"([A-Za-z0-9+/=]+)"`)

// payloadTexts is every base64 field of a JSON history, decoded, one a line.
func payloadTexts(out string) string {
	var b strings.Builder
	for _, m := range payloadData.FindAllStringSubmatch(out, -1) {
		if d, err := base64.StdEncoding.DecodeString(m[1]); err == nil {
			b.Write(d)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// decodeVia posts payloads to a codec server's /decode as the Web UI does and returns the status
// and the decoded payloads' data, concatenated.
func decodeVia(t *testing.T, url, token string, ps []*commonpb.Payload) (int, string) {
	t.Helper()
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: ps})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, url+"/decode", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Namespace", "default")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, ""
	}
	var dec commonpb.Payloads
	if err := protojson.Unmarshal(b, &dec); err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, p := range dec.GetPayloads() {
		all.Write(p.GetData())
		all.WriteByte('\n')
	}
	return resp.StatusCode, all.String()
}
