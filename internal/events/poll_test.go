package events

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/keelrun/keel/internal/contract"
)

// beatsClient answers describes with one pending activity whose last heartbeat is at the next of
// beats (milliseconds), and says on described when the last one was answered.
type beatsClient struct {
	client.Client
	beats     []int64
	n         atomic.Int32
	described chan struct{}
}

func (c *beatsClient) DescribeWorkflow(ctx context.Context, _, _ string) (*client.WorkflowExecutionDescription, error) {
	i := int(c.n.Add(1)) - 1
	if i >= len(c.beats) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	details, err := converter.GetDefaultDataConverter().ToPayloads(contract.LiveDetails{Live: &contract.LiveEvents{
		Events: []contract.Event{{Event: contract.EventDelta, Seq: int(c.beats[i])}}}})
	if err != nil {
		return nil, err
	}
	pa := &workflow.PendingActivityInfo{ActivityId: "1", HeartbeatDetails: details}
	if c.beats[i] > 0 {
		pa.LastHeartbeatTime = timestamppb.New(time.UnixMilli(c.beats[i]))
	}
	if i == len(c.beats)-1 {
		defer close(c.described)
	}
	return &client.WorkflowExecutionDescription{RawResponse: &workflowservice.DescribeWorkflowExecutionResponse{
		PendingActivities: []*workflow.PendingActivityInfo{pa}}}, nil
}

// countingConverter counts the payloads it decodes.
type countingConverter struct {
	converter.DataConverter
	decoded atomic.Int32
}

func (c *countingConverter) FromPayload(p *commonpb.Payload, v any) error {
	c.decoded.Add(1)
	return c.DataConverter.FromPayload(p, v)
}

// TestPollDecodesNewHeartbeatsOnly: a follower reads a running activity's details a few times per
// heartbeat, and decodes them (decrypts, with codec.keys) only when a new heartbeat came.
func TestPollDecodesNewHeartbeatsOnly(t *testing.T) {
	cases := []struct {
		name  string
		beats []int64 // 0: no heartbeat yet
		want  int32
	}{
		{"the same heartbeat read four times", []int64{5, 5, 5, 5}, 1},
		{"none, then two", []int64{0, 0, 5, 5, 6, 6, 6}, 2},
		{"a new one every read", []int64{1, 2, 3}, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			fc := &beatsClient{beats: c.beats, described: make(chan struct{})}
			dc := &countingConverter{DataConverter: converter.GetDefaultDataConverter()}
			out := make(chan contract.Event, 64)
			f := &follower{c: fc, o: FollowOptions{Poll: time.Millisecond, DataConverter: dc}, out: out, next: map[string]int{}}
			r := &runState{workflowID: "w", runID: "r", pending: []pendingActivity{{scheduled: 5, activityID: "1"}}}
			done := make(chan struct{})
			go func() { defer close(done); f.pollHeartbeats(ctx, r) }()
			select {
			case <-fc.described:
			case <-ctx.Done():
				t.Fatal("the follower stopped reading")
			}
			cancel()
			<-done
			if got := dc.decoded.Load(); got != c.want {
				t.Fatalf("decoded %d times, want %d", got, c.want)
			}
		})
	}
}
