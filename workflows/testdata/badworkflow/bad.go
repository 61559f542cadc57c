// Package badworkflow is a workflow that breaks determinism on purpose, so the workflowcheck test
// can prove the checker still reports what it should.
package badworkflow

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

// Bad reads the wall clock inside a workflow.
func Bad(ctx workflow.Context) (time.Time, error) {
	return time.Now(), nil
}
