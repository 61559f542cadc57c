package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/keelrun/keel/internal/codec"
	"github.com/keelrun/keel/internal/contract"
)

// TestSealedKeepsNothingPlain stores a transcript and a blob through Sealed and checks that no
// file holds their text, that they load back, and that what was stored before the key still loads.
func TestSealedKeepsNothingPlain(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	fs, err := OpenFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := codec.NewKeyring(codec.Key{ID: "k1", Secret: bytes.Repeat([]byte{1}, codec.KeySize)})
	if err != nil {
		t.Fatal(err)
	}
	older, err := fs.Append(ctx, "", []contract.Message{{Role: "user", Content: "written before the key"}})
	if err != nil {
		t.Fatal(err)
	}
	st := Sealed(fs, ring)
	msgs := []contract.Message{
		{Role: "user", Content: "fix the secret-task bug"},
		{Role: "assistant", ToolCalls: []contract.ToolCall{{ID: "c1", Name: "write_file", Arguments: `{"content":"secret-file-body"}`}}},
		{Role: "tool", ToolCallID: "c1", Name: "run_command", Content: "secret-command-output"},
	}
	head, err := st.Append(ctx, older, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutBlob(ctx, "b1", []byte("secret-blob")); err != nil {
		t.Fatal(err)
	}
	key := LedgerKey{SessionID: "s", Turn: 1, CallID: "c1", TurnRun: "r"}
	if err := st.Claim(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Settle(ctx, key, Outcome{Result: contract.ToolResult{Content: "secret-ledger-output", Changed: true}}); err != nil {
		t.Fatal(err)
	}
	if e, err := st.Lookup(ctx, key); err != nil || e.Outcome == nil || e.Outcome.Result.Content != "secret-ledger-output" || !e.Outcome.Result.Changed {
		t.Fatalf("ledger entry %+v, %v", e, err)
	}
	got, err := st.Load(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]contract.Message{{Role: "user", Content: "written before the key"}}, msgs...)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded %+v\nwant %+v", got, want)
	}
	if b, err := st.GetBlob(ctx, "b1"); err != nil || string(b) != "secret-blob" {
		t.Fatalf("blob = %q, %v", b, err)
	}
	err = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		for _, secret := range []string{"secret-task", "secret-file-body", "secret-command-output", "secret-blob", "secret-ledger-output"} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds %q", p, secret)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
