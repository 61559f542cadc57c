package app

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/keelrun/keel/internal/contract"
)

// searchAttributes are the custom search attributes sessions keep up to date.
var searchAttributes = []struct {
	key  temporal.SearchAttributeKey
	kind enumspb.IndexedValueType
}{
	{contract.StatusKey, enumspb.INDEXED_VALUE_TYPE_KEYWORD},
	{contract.TurnsKey, enumspb.INDEXED_VALUE_TYPE_INT},
	{contract.TokensKey, enumspb.INDEXED_VALUE_TYPE_INT},
	{contract.PendingEscalationKey, enumspb.INDEXED_VALUE_TYPE_BOOL},
	{contract.PullRequestKey, enumspb.INDEXED_VALUE_TYPE_KEYWORD},
	{contract.GitHubJobKey, enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST},
	{contract.TaskKey, enumspb.INDEXED_VALUE_TYPE_KEYWORD},
}

// EnsureSearchAttributes registers Keel's search attributes on the server if they are missing, so
// the Web UI can filter sessions (for example, all sessions waiting on a person).
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("listing search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, sa := range searchAttributes {
		if _, ok := have.GetCustomAttributes()[sa.key.GetName()]; !ok {
			missing[sa.key.GetName()] = sa.kind
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
