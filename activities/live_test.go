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

// TestLiveOutputReachesTheJournal: output written while a command runs becomes output events in
// the call's journal naming the call, each at most contract.OutputEventMax bytes, the last of
// them ending with the newest output; nothing is added after stop.
func TestLiveOutputReachesTheJournal(t *testing.T) {
	a := &Activities{}
	ctx, live := a.beginLive(context.Background(), false, events.NewJournal(nil), func() any { return nil })
	defer live.end(ctx)
	req := contract.ToolRequest{SessionID: "s1", Turn: 3, Call: contract.ToolCall{ID: "c1", Name: "run_command"}}
	w, stop := a.liveOutput(ctx, req)
	for i := range 2000 {
		fmt.Fprintf(w, "line %04d\n", i)
	}
	deadline := time.Now().Add(10 * time.Second)
	var evs []contract.Event
	for {
		if l := live.j.Live(); l != nil {
			evs = l.Events
		}
		if len(evs) > 0 && strings.HasSuffix(evs[len(evs)-1].Text, "line 1999\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the newest output never arrived; events %+v", evs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, e := range evs {
		if e.Event != contract.EventOutput || e.CallID != "c1" || e.Tool != "run_command" || e.Turn != 3 || e.WorkflowID != "s1" {
			t.Fatalf("event %+v", e)
		}
		if len(e.Text) > contract.OutputEventMax {
			t.Fatalf("an output event of %d bytes, over the bound %d", len(e.Text), contract.OutputEventMax)
		}
	}
	stop()
	n := len(evs)
	// stop returns once the publishing goroutine has ended, so nothing can follow it.
	fmt.Fprintln(w, "after stop")
	if l := live.j.Live(); len(l.Events) != n {
		t.Fatalf("%d events after stop, want %d", len(l.Events), n)
	}
}

// TestPublishOutsideAnActivity: a call with no journal (a compaction's model call) publishes
// nowhere, and a nil writer never travels in the context.
func TestPublishOutsideAnActivity(t *testing.T) {
	publish(context.Background(), contract.Event{Event: contract.EventNotice})
	if liveOf(context.Background()) != nil {
		t.Fatal("a journal without beginLive")
	}
	if liveOutputOf(withLiveOutput(context.Background(), nil)) != nil {
		t.Fatal("a nil writer travelled in the context")
	}
}
