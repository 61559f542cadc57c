package bench

import (
	"context"
	"reflect"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	"github.com/keelrun/keel/activities"
	"github.com/keelrun/keel/contract"
	"github.com/keelrun/keel/toolspec"
)

// registerListToolsShim registers a ListTools activity that offers the built-in tools when the
// activities package does not provide one yet, so the benchmarks run on a tree where the session
// workflow already lists its tools through an activity but the activity is not there.
func registerListToolsShim(w worker.ActivityRegistry, acts *activities.Activities) {
	if reflect.ValueOf(acts).MethodByName("ListTools").IsValid() {
		return
	}
	w.RegisterActivityWithOptions(func(context.Context) ([]contract.ToolSpec, error) {
		return toolspec.Builtin(), nil
	}, activity.RegisterOptions{Name: contract.ListToolsActivity})
}
