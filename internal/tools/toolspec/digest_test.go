package toolspec

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// TestSplitJoin: a list that starts with the built-in tools travels as their digest and the rest,
// and comes back whole; any other list travels as it is; a digest of other built-in tools is an
// error, not a silent guess.
func TestSplitJoin(t *testing.T) {
	mcpTool := contract.ToolSpec{Name: "lookup", Description: "Look up", Parameters: contract.Schema(`{"type":"object"}`), Server: "docs"}
	changed := Builtin()
	changed[0].Description += " Changed."
	cases := []struct {
		name        string
		list        []contract.ToolSpec
		wantDigest  bool
		wantRestLen int
	}{
		{"built-in only", Builtin(), true, 0},
		{"built-in and MCP", append(Builtin(), mcpTool), true, 1},
		{"MCP only", []contract.ToolSpec{mcpTool}, false, 1},
		{"other built-in tools", changed, false, len(changed)},
		{"none", nil, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			digest, rest := Split(c.list)
			if (digest != "") != c.wantDigest || len(rest) != c.wantRestLen {
				t.Fatalf("Split: digest %q, %d tools; want digest %v, %d tools", digest, len(rest), c.wantDigest, c.wantRestLen)
			}
			back, err := Join(digest, rest)
			if err != nil {
				t.Fatal(err)
			}
			if Digest(back) != Digest(c.list) {
				t.Fatalf("Join gave %v, want %v", Names(back), Names(c.list))
			}
		})
	}
	if _, err := Join(Digest(changed), nil); err == nil {
		t.Fatal("Join accepted the digest of other built-in tools")
	}
}

// TestSchemaJSON: a schema is written as JSON, and the base64 form of older histories decodes to
// the same schema.
func TestSchemaJSON(t *testing.T) {
	spec := Builtin()[0]
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var round contract.ToolSpec
	if err := json.Unmarshal(b, &round); err != nil || !slices.Equal(round.Parameters, spec.Parameters) {
		t.Fatalf("round trip: %v, %s", err, round.Parameters)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || raw["parameters"][0] != '{' {
		t.Fatalf("parameters are not written as JSON: %s", raw["parameters"])
	}
	old, err := json.Marshal(struct {
		Name       string `json:"name"`
		Parameters []byte `json:"parameters"`
	}{spec.Name, spec.Parameters})
	if err != nil {
		t.Fatal(err)
	}
	var fromOld contract.ToolSpec
	if err := json.Unmarshal(old, &fromOld); err != nil || !slices.Equal(fromOld.Parameters, spec.Parameters) {
		t.Fatalf("base64 schema of an older history: %v, %s", err, fromOld.Parameters)
	}
}
