package events

import (
	"context"
	"errors"
	"slices"
	"testing"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
)

// pagesService answers history reads from a script, and records the tokens it was asked with.
type pagesService struct {
	workflowservice.WorkflowServiceClient
	answers []pageAnswer
	asked   []string
}

type pageAnswer struct {
	events int
	token  string
	err    error
}

func (s *pagesService) GetWorkflowExecutionHistory(_ context.Context, req *workflowservice.GetWorkflowExecutionHistoryRequest, _ ...grpc.CallOption) (*workflowservice.GetWorkflowExecutionHistoryResponse, error) {
	s.asked = append(s.asked, string(req.GetNextPageToken()))
	a := s.answers[0]
	s.answers = s.answers[1:]
	if a.err != nil {
		return nil, a.err
	}
	h := &historypb.History{}
	for range a.events {
		h.Events = append(h.Events, &historypb.HistoryEvent{})
	}
	return &workflowservice.GetWorkflowExecutionHistoryResponse{History: h, NextPageToken: []byte(a.token)}, nil
}

type serviceClient struct {
	client.Client
	svc workflowservice.WorkflowServiceClient
}

func (c serviceClient) WorkflowService() workflowservice.WorkflowServiceClient { return c.svc }

// TestHistoryReader: a reader goes on from each answer's token, waits before the next long poll
// only when it is caught up (an answer with events short of a page), starts over after an error,
// and says when the history has no more.
func TestHistoryReader(t *testing.T) {
	svc := &pagesService{answers: []pageAnswer{
		{events: historyPage, token: "a"}, // a full page: more are there
		{events: 2, token: "b"},           // caught up
		{events: 0, token: "b"},           // a long poll that ran out
		{err: errors.New("connection reset")},
		{events: 5, token: "c"},
		{events: 1},
	}}
	h := newHistoryReader(serviceClient{svc: svc}, "default", "w", "r")
	var settled []bool
	var last bool
	for range 6 {
		settled = append(settled, h.settle)
		_, over, err := h.next(context.Background())
		if err != nil && over {
			t.Fatal("an error said the history ended")
		}
		last = over
	}
	if want := []string{"", "a", "b", "b", "", "c"}; !slices.Equal(svc.asked, want) {
		t.Errorf("asked with tokens %q, want %q", svc.asked, want)
	}
	if want := []bool{false, false, true, false, false, true}; !slices.Equal(settled, want) {
		t.Errorf("waited before the reads %v, want %v", settled, want)
	}
	if !last {
		t.Error("an answer without a token did not end the history")
	}
}
