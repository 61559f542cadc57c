package mcp

import (
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestExposeNames(t *testing.T) {
	tool := func(name string, readOnly bool) *sdk.Tool {
		return &sdk.Tool{Name: name, InputSchema: map[string]any{"type": "object"}, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: readOnly}}
	}
	all := []listed{
		{"one", tool("lookup", true)},
		{"one", tool("shared", false)},
		{"two", tool("shared", true)},
		{"two", tool("read_file", true)},     // clashes with a built-in tool
		{"two", tool("dotted.name/x", true)}, // characters providers reject
		{"two", &sdk.Tool{Name: "no_schema"}},
	}
	specs, names := expose(all)
	var got []string
	for _, s := range specs {
		got = append(got, s.Server+":"+s.Name)
	}
	want := "one:lookup,one:one__shared,two:two__shared,two:two__read_file,two:dotted_name_x,two:no_schema"
	if strings.Join(got, ",") != want {
		t.Fatalf("exposed %v, want %s", got, want)
	}
	if info := names["two"]["dotted_name_x"]; info.name != "dotted.name/x" || !info.readOnly {
		t.Fatalf("dotted_name_x maps to %+v", info)
	}
	if !specs[1].Writes || specs[2].Writes || !specs[5].Writes {
		t.Fatalf("Writes flags wrong: %+v", specs)
	}
	if string(specs[5].Parameters) != `{"type":"object"}` {
		t.Fatalf("missing schema became %s", specs[5].Parameters)
	}
}

func TestCleanAndUnique(t *testing.T) {
	long := strings.Repeat("a", 70)
	cases := []struct {
		in    string
		taken map[string]bool
		want  string
	}{
		{"ok_name-1", nil, "ok_name-1"},
		{"a b.c", nil, "a_b_c"},
		{"", nil, "tool"},
		{long, nil, long[:64]},
		{"x", map[string]bool{"x": true, "x_2": true}, "x_3"},
		{long, map[string]bool{long[:64]: true}, long[:62] + "_2"},
	}
	for _, tc := range cases {
		if got := unique(clean(tc.in), tc.taken); got != tc.want {
			t.Errorf("unique(clean(%q)) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestServerEnv(t *testing.T) {
	got := serverEnv([]string{"PATH=/bin", "OPENAI_API_KEY=secret", "HOME=/h", "GOCACHE=/c"}, []string{"TOKEN=given"})
	want := "PATH=/bin,HOME=/h,GOCACHE=/c,TOKEN=given"
	if strings.Join(got, ",") != want {
		t.Fatalf("env %v, want %s", got, want)
	}
}
