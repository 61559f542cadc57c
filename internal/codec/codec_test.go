package codec

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

func secret(b byte) []byte { return bytes.Repeat([]byte{b}, KeySize) }

func ring(t *testing.T, keys ...Key) *Keyring {
	t.Helper()
	r, err := NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPayloadsRoundTripAndRotate(t *testing.T) {
	old := ring(t, Key{ID: "k1", Secret: secret(1)})
	rotated := ring(t, Key{ID: "k2", Secret: secret(2)}, Key{ID: "k1", Secret: secret(1)})
	newOnly := ring(t, Key{ID: "k2", Secret: secret(2)})
	plain, err := converter.GetDefaultDataConverter().ToPayload("the secret task")
	if err != nil {
		t.Fatal(err)
	}
	enc, err := old.Encode([]*commonpb.Payload{plain})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(enc[0].Data, []byte("secret task")) || string(enc[0].Metadata[converter.MetadataEncoding]) != Encoding ||
		string(enc[0].Metadata[MetadataKey]) != "k1" || len(enc[0].Metadata) != 2 {
		t.Fatalf("encoded payload leaks or lacks metadata: %v", enc[0])
	}
	cases := []struct {
		name    string
		r       *Keyring
		wantErr string
	}{
		{"same key", old, ""},
		{"rotated ring keeps the old key", rotated, ""},
		{"old key dropped", newOnly, `key "k1", which is not among the configured keys`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dec, err := c.r.Decode(enc)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var s string
			if err := converter.GetDefaultDataConverter().FromPayload(dec[0], &s); err != nil || s != "the secret task" {
				t.Fatalf("decoded %q, %v", s, err)
			}
		})
	}
	if enc2, _ := rotated.Encode([]*commonpb.Payload{plain}); string(enc2[0].Metadata[MetadataKey]) != "k2" {
		t.Fatalf("a rotated ring encrypts with %s, want k2", enc2[0].Metadata[MetadataKey])
	}
	if dec, err := newOnly.Decode([]*commonpb.Payload{plain}); err != nil || dec[0] != plain {
		t.Fatalf("a plain payload does not pass unchanged: %v", err)
	}
}

func TestSealOpen(t *testing.T) {
	r := ring(t, Key{ID: "a", Secret: secret(7)})
	other := ring(t, Key{ID: "a", Secret: secret(8)})
	sealed, err := r.Seal([]byte(`{"content":"hello"}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		r       *Keyring
		in      []byte
		want    string
		wantErr bool
	}{
		{"sealed", r, sealed, `{"content":"hello"}`, false},
		{"plain passes", r, []byte(`{"old":1}`), `{"old":1}`, false},
		{"wrong key with the same ID", other, sealed, "", true},
		{"altered", r, append(append([]byte{}, sealed[:len(sealed)-1]...), sealed[len(sealed)-1]^1), "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.r.Open(c.in)
			if (err != nil) != c.wantErr || (!c.wantErr && string(got) != c.want) {
				t.Fatalf("Open = %q, %v", got, err)
			}
		})
	}
	if bytes.Contains(sealed, []byte("hello")) {
		t.Fatal("sealed bytes hold the plain text")
	}
}

func TestParseKeys(t *testing.T) {
	dir := t.TempDir()
	raw := filepath.Join(dir, "raw")
	if err := os.WriteFile(raw, secret(3), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"B64": base64.StdEncoding.EncodeToString(secret(4)), "HEX": hex.EncodeToString(secret(5)), "SHORT": "abc"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cases := []struct {
		name    string
		specs   []string
		first   string
		wantErr string
	}{
		{"file and env", []string{"new=file:" + raw, "old=env:B64"}, "new", ""},
		{"hex", []string{"h=env:HEX"}, "h", ""},
		{"missing variable", []string{"x=env:NOPE"}, "", "NOPE is not set"},
		{"short key", []string{"x=env:SHORT"}, "", "AES-256 needs 32"},
		{"bad form", []string{"x"}, "", "ID=env:VARIABLE"},
		{"bad source", []string{"x=vault:y"}, "", "must be env or file"},
		{"twice", []string{"x=env:B64", "x=env:HEX"}, "", "given twice"},
		{"none", nil, "", "no encryption key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := ParseKeys(c.specs, lookup)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || r.EncryptingKeyID() != c.first {
				t.Fatalf("ParseKeys = %v, %v", r, err)
			}
		})
	}
}

func TestHandler(t *testing.T) {
	r := ring(t, Key{ID: "k", Secret: secret(9)})
	plain, _ := converter.GetDefaultDataConverter().ToPayload("decoded task")
	enc, _ := r.Encode([]*commonpb.Payload{plain})
	body, _ := json.Marshal(map[string]any{"payloads": []json.RawMessage{mustJSON(t, enc[0])}})
	srv := httptest.NewServer(r.Handler(ServerOptions{Token: "tok", Origins: []string{"http://ui.local:8233"}}))
	defer srv.Close()
	cases := []struct {
		name, method, auth, origin string
		status                     int
		wantCORS, wantPlain        bool
	}{
		{"decodes with the token", http.MethodPost, "Bearer tok", "http://ui.local:8233", 200, true, true},
		{"bare token", http.MethodPost, "tok", "", 200, false, true},
		{"no token", http.MethodPost, "", "http://ui.local:8233", 401, true, false},
		{"wrong token", http.MethodPost, "Bearer nope", "", 401, false, false},
		{"preflight", http.MethodOptions, "", "http://ui.local:8233", 200, true, false},
		{"other origin", http.MethodOptions, "", "http://evil.example", 200, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, srv.URL+"/decode", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out bytes.Buffer
			_, _ = out.ReadFrom(resp.Body)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, out.String())
			}
			if got := resp.Header.Get("Access-Control-Allow-Origin") != ""; got != c.wantCORS {
				t.Fatalf("CORS header present = %v, want %v", got, c.wantCORS)
			}
			// The JSON payload's data is base64: "decoded task" as JSON text is "ImRlY29kZWQgdGFzayI=".
			if got := strings.Contains(out.String(), base64.StdEncoding.EncodeToString([]byte(`"decoded task"`))); got != c.wantPlain {
				t.Fatalf("plain text in the answer = %v, want %v: %s", got, c.wantPlain, out.String())
			}
		})
	}
}

func mustJSON(t *testing.T, p *commonpb.Payload) json.RawMessage {
	t.Helper()
	b, err := (&converter.ProtoJSONPayloadConverter{}).ToPayload(p)
	if err != nil {
		t.Fatal(err)
	}
	return b.Data
}
