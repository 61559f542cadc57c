package flaky

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connect serves a fresh flaky server in memory and returns a client session to it.
func connect(t *testing.T) (*mcp.ClientSession, *Counts) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	counts := &Counts{}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := NewServer(counts).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, counts
}

func TestTools(t *testing.T) {
	cs, counts := connect(t)
	ctx := context.Background()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("%s is not marked read-only", tool.Name)
		}
	}
	if len(names) != 3 {
		t.Fatalf("tools %v, want echo, flaky_lookup, wait", names)
	}

	cases := []struct {
		tool    string
		args    map[string]any
		isError bool
		text    string
	}{
		{LookupTool, map[string]any{"query": "one"}, true, Unavailable},
		{LookupTool, map[string]any{"query": "two"}, true, Unavailable},
		{EchoTool, map[string]any{"text": "hi"}, false, "hi"},
		{WaitTool, map[string]any{"seconds": 0}, false, "done"},
	}
	for _, tc := range cases {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil {
			t.Fatalf("%s: %v", tc.tool, err)
		}
		text := ""
		if len(res.Content) == 1 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				text = tc.Text
			}
		}
		if res.IsError != tc.isError || text != tc.text {
			t.Errorf("%s: isError %v text %q, want %v %q", tc.tool, res.IsError, text, tc.isError, tc.text)
		}
	}
	if counts.Lookups.Load() != 2 || counts.Echoes.Load() != 1 || counts.Waits.Load() != 1 {
		t.Errorf("counts lookups %d echoes %d waits %d, want 2 1 1", counts.Lookups.Load(), counts.Echoes.Load(), counts.Waits.Load())
	}
}

func TestWaitEndsOnCancel(t *testing.T) {
	cs, counts := connect(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: WaitTool, Arguments: map[string]any{"seconds": 60}})
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for counts.Waits.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the wait call never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a cancelled wait answered as if it had finished")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	for counts.Cancelled.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the server never saw the cancellation")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
