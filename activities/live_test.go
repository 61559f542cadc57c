package activities

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/events"
)

// TestLiveOutputReachesTheSink: output written while a command runs arrives at the session's sink
// as output events naming the call, each at most contract.OutputEventMax bytes, the last of them
// ending with the newest output; nothing is posted after stop.
func TestLiveOutputReachesTheSink(t *testing.T) {
	sink, err := events.Listen("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	a := &Activities{Events: events.NewPublisher()}
	req := contract.ToolRequest{SessionID: "s1", Turn: 3, Sinks: []string{sink.URL()}, Call: contract.ToolCall{ID: "c1", Name: "run_command"}}
	w, stop := a.liveOutput(context.Background(), req)
	if w == nil {
		t.Fatal("no live writer although a sink listens")
	}
	for i := range 2000 {
		fmt.Fprintf(w, "line %04d\n", i)
	}
	var last contract.Event
	deadline := time.After(10 * time.Second)
	for !strings.HasSuffix(last.Text, "line 1999\n") {
		select {
		case last = <-sink.Events():
			if last.Event != contract.EventOutput || last.CallID != "c1" || last.Tool != "run_command" || last.Turn != 3 || last.WorkflowID != "s1" {
				t.Fatalf("event %+v", last)
			}
			if len(last.Text) > contract.OutputEventMax {
				t.Fatalf("an output event of %d bytes, over the bound %d", len(last.Text), contract.OutputEventMax)
			}
		case <-deadline:
			t.Fatalf("the newest output never arrived; last event %+v", last)
		}
	}
	stop()
	fmt.Fprintln(w, "after stop")
	select {
	case e := <-sink.Events():
		t.Fatalf("an event after stop: %+v", e)
	case <-time.After(3 * liveEvery):
	}
}

// TestLiveOutputWithoutSinks: nobody watching, no writer and no goroutine.
func TestLiveOutputWithoutSinks(t *testing.T) {
	a := &Activities{Events: events.NewPublisher()}
	w, stop := a.liveOutput(context.Background(), contract.ToolRequest{})
	stop()
	if w != nil {
		t.Fatal("a live writer without sinks")
	}
	if liveOutputOf(withLiveOutput(context.Background(), nil)) != nil {
		t.Fatal("a nil writer travelled in the context")
	}
}
