package events

import (
	"encoding/json"

	commonpb "go.temporal.io/api/common/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
)

// The marker in which the Go SDK records a local activity (a turn runs its reads as local
// activities): what ran under "data", its result under "result". The SDK's own names, which its
// replay reads too.
const (
	localActivityMarker = "LocalActivity"
	localActivityData   = "data"
	localActivityResult = "result"
)

// LocalActivity is what a history's marker says about one local activity.
type LocalActivity struct {
	// Type is the activity's name, Attempt its last attempt (from 1).
	Type    string
	Attempt int32
	// Result is the activity's result, nil when it failed with Failure.
	Result  *commonpb.Payloads
	Failure *failurepb.Failure
}

// LocalActivityOf reads a local activity's marker; ok is false for any other event. Type and
// Attempt are left empty where the description does not decode as plain JSON (a payload codec
// encrypted it).
func LocalActivityOf(ev *historypb.HistoryEvent) (la LocalActivity, ok bool) {
	a := ev.GetMarkerRecordedEventAttributes()
	if a.GetMarkerName() != localActivityMarker {
		return la, false
	}
	la = LocalActivity{Result: a.GetDetails()[localActivityResult], Failure: a.GetFailure()}
	var d struct {
		ActivityType string
		Attempt      int32
	}
	if data := a.GetDetails()[localActivityData].GetPayloads(); len(data) == 1 && json.Unmarshal(data[0].GetData(), &d) == nil {
		la.Type, la.Attempt = d.ActivityType, d.Attempt
	}
	return la, true
}
