package app

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
)

// EnsureSearchAttributes registers Keel's search attributes on the server if they are missing, so
// the Web UI can filter sessions (for example, all sessions waiting on a person).
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("listing search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, key := range contract.SearchAttributes {
		if _, ok := have.GetCustomAttributes()[key.GetName()]; !ok {
			missing[key.GetName()] = key.GetValueType()
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: missing})
	if err != nil {
		return fmt.Errorf("registering search attributes: %w", err)
	}
	return nil
}
