package events

import (
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
)

// TestLocalActivityOf reads the SDK's local activity marker, and nothing else, as one.
func TestLocalActivityOf(t *testing.T) {
	payloads := func(data string) *commonpb.Payloads {
		return &commonpb.Payloads{Payloads: []*commonpb.Payload{{Data: []byte(data)}}}
	}
	marker := func(name string, details map[string]*commonpb.Payloads, f *failurepb.Failure) *historypb.HistoryEvent {
		return &historypb.HistoryEvent{Attributes: &historypb.HistoryEvent_MarkerRecordedEventAttributes{
			MarkerRecordedEventAttributes: &historypb.MarkerRecordedEventAttributes{MarkerName: name, Details: details, Failure: f},
		}}
	}
	result := payloads(`{"content":"a.go"}`)
	failed := &failurepb.Failure{Message: "deadline"}
	tests := []struct {
		name   string
		ev     *historypb.HistoryEvent
		ok     bool
		want   LocalActivity
		result bool
	}{
		{"a completed read", marker("LocalActivity", map[string]*commonpb.Payloads{
			"data": payloads(`{"ActivityID":"1","ActivityType":"RunTool","Attempt":1}`), "result": result}, nil),
			true, LocalActivity{Type: "RunTool", Attempt: 1}, true},
		{"a failed read", marker("LocalActivity", map[string]*commonpb.Payloads{
			"data": payloads(`{"ActivityType":"RunTool","Attempt":1}`)}, failed),
			true, LocalActivity{Type: "RunTool", Attempt: 1, Failure: failed}, false},
		{"a description a codec encrypted", marker("LocalActivity", map[string]*commonpb.Payloads{
			"data": payloads("\x00\x01sealed"), "result": result}, nil),
			true, LocalActivity{}, true},
		{"a version marker", marker("Version", map[string]*commonpb.Payloads{"change-id": payloads(`"local-reads"`)}, nil), false, LocalActivity{}, false},
		{"not a marker", &historypb.HistoryEvent{}, false, LocalActivity{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := LocalActivityOf(tt.ev)
			if ok != tt.ok || got.Type != tt.want.Type || got.Attempt != tt.want.Attempt || got.Failure != tt.want.Failure {
				t.Fatalf("got %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
			if (got.Result == result) != tt.result {
				t.Fatalf("result %v, want it carried: %v", got.Result, tt.result)
			}
		})
	}
}
