package bench

import "testing"

func TestParseActions(t *testing.T) {
	page := `# HELP action action
# TYPE action counter
action{action_type="grpc_StartWorkflowExecution",namespace="default",operation="StartWorkflowExecution"} 2
action{action_type="command_ScheduleActivityTask",namespace="default",operation="RespondWorkflowTaskCompleted"} 5
action{action_type="grpc_RecordActivityTaskHeartbeat",namespace="default",operation="RecordActivityTaskHeartbeat"} 3
action_total{action_type="grpc_RecordActivityTaskHeartbeat",namespace="other"} 1
actions_other{action_type="grpc_StartWorkflowExecution"} 100
persistence_requests{operation="x"} 7
service_requests{namespace="default",operation="DescribeWorkflowExecution",service_name="frontend"} 4
service_requests{namespace="default",operation="DescribeWorkflowExecution",service_name="history"} 4
service_requests_total{namespace="default",operation="GetWorkflowExecutionHistory",service_name="frontend"} 6
`
	got := ParseActions(page)
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"total", got.Total, 11},
		{"starts", got.ByType["grpc_StartWorkflowExecution"], 2},
		{"activities", got.ByType["command_ScheduleActivityTask"], 5},
		{"heartbeats", got.ByType["grpc_RecordActivityTaskHeartbeat"], 4},
		{"the frontend's describes", got.Calls["DescribeWorkflowExecution"], 4},
		{"the frontend's history reads", got.Calls["GetWorkflowExecutionHistory"], 6},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	later := ParseActions(page + `action{action_type="grpc_StartWorkflowExecution",namespace="x"} 3` + "\n")
	d := later.Sub(got)
	if d.Total != 3 || d.ByType["grpc_StartWorkflowExecution"] != 3 || len(d.ByType) != 1 {
		t.Errorf("difference = %+v, want 3 starts and nothing else", d)
	}
}
