package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
)

// resolveScan is how many sessions, open ones first and then the most recently closed, Resolve
// looks through for a prefix.
const resolveScan = 1000

// ErrAmbiguous is a prefix that starts more than one session's ID.
var ErrAmbiguous = errors.New("ambiguous session ID prefix")

// Resolve turns what a person typed for a session into its workflow ID: the whole ID, or a prefix
// unique among the open and recent sessions, of the whole ID or of its last part (the short random
// suffix, 62c0e1 of keel-run-20260102-150405-62c0e1). A whole ID that exists is taken as it is,
// whatever else it starts; a prefix that starts no session is ErrNotFound, one that starts
// several is ErrAmbiguous naming them.
func (c Client) Resolve(ctx context.Context, typed string) (string, error) {
	typed = strings.TrimSpace(typed)
	if typed == "" {
		return "", fmt.Errorf("no session ID given: %w", ErrNotFound)
	}
	_, err := c.Temporal.DescribeWorkflow(ctx, typed, "")
	var nf *serviceerror.NotFound
	switch {
	case err == nil:
		return typed, nil
	case !errors.As(err, &nf):
		return "", fmt.Errorf("looking up session %s: %w", typed, err)
	}
	resp, err := c.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{PageSize: resolveScan, Query: Query("")})
	if err != nil {
		return "", fmt.Errorf("listing sessions to find %s: %w", typed, err)
	}
	var ids []string
	for _, ex := range resp.GetExecutions() {
		id := ex.GetExecution().GetWorkflowId()
		if MatchesPrefix(id, typed) && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	switch len(ids) {
	case 0:
		return "", &kindError{kind: ErrNotFound, err: fmt.Errorf("no session %s, and no open or recent session's ID starts with it (starter list shows them)", typed)}
	case 1:
		return ids[0], nil
	}
	shown := ids
	if len(shown) > 5 {
		shown = shown[:5]
	}
	return "", fmt.Errorf("%w: %q starts %d sessions (%s%s); type more of the ID", ErrAmbiguous, typed, len(ids), strings.Join(shown, ", "), map[bool]string{true: ", …"}[len(ids) > 5])
}

// MatchesPrefix says whether typed is a prefix of the session ID id or of its last part.
func MatchesPrefix(id, typed string) bool {
	if strings.HasPrefix(id, typed) {
		return true
	}
	if i := strings.LastIndexByte(id, '-'); i >= 0 {
		return strings.HasPrefix(id[i+1:], typed)
	}
	return false
}
