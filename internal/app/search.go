package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
)

// mappedWithin bounds how long EnsureSearchAttributes waits for the server to use attributes it
// registered: a server that does not reread them on every call maps a new one when its namespace
// registry next refreshes (about a second on Keel's dev server).
const mappedWithin = 15 * time.Second

// mappedPoll is how often it asks meanwhile.
const mappedPoll = 50 * time.Millisecond

// EnsureSearchAttributes registers Keel's search attributes on the server if they are missing, so
// the Web UI can filter sessions (for example, all sessions waiting on a person), and returns once
// the server accepts them: a session started straight after (starter run) sets them.
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
	if len(missing) > 0 {
		_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: missing})
		if err != nil {
			return fmt.Errorf("registering search attributes: %w", err)
		}
	}
	return awaitMapped(ctx, c, namespace)
}

// awaitMapped waits until a visibility query naming every one of Keel's search attributes is
// accepted: the server maps an attribute for queries and for starts alike, so a start that sets
// one is accepted from then on. Only a refusal of the query's attributes is waited out; a server
// that cannot count (another error) is left to say so when a session starts.
func awaitMapped(ctx context.Context, c client.Client, namespace string) error {
	names := make([]string, len(contract.SearchAttributes))
	for i, key := range contract.SearchAttributes {
		names[i] = key.GetName() + " IS NULL"
	}
	req := &workflowservice.CountWorkflowExecutionsRequest{Namespace: namespace, Query: strings.Join(names, " OR ")}
	ctx, cancel := context.WithTimeout(ctx, mappedWithin)
	defer cancel()
	tick := time.NewTicker(mappedPoll)
	defer tick.Stop()
	for {
		_, err := c.CountWorkflow(ctx, req)
		var refused *serviceerror.InvalidArgument
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("waiting for the server to accept Keel's search attributes: %w", ctx.Err())
		}
		if err == nil || !errors.As(err, &refused) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the server to accept Keel's search attributes: %w (last refusal: %w)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}
