package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Actions is a reading of the Temporal server's `action` counter, the metric Temporal documents
// for estimating Temporal Cloud actions: the total and the count of each action_type. Calls is
// the frontend's `service_requests` by operation from the same page, billed or not (a watcher's
// describes and history reads are not), to say what a session asks of the server.
type Actions struct {
	Total  float64
	ByType map[string]float64
	Calls  map[string]float64
}

// Sub is what happened between an earlier reading and this one.
func (a Actions) Sub(earlier Actions) Actions {
	return Actions{Total: a.Total - earlier.Total, ByType: subCounts(a.ByType, earlier.ByType), Calls: subCounts(a.Calls, earlier.Calls)}
}

// subCounts is now less earlier, per key, without the keys that did not move.
func subCounts(now, earlier map[string]float64) map[string]float64 {
	out := maps.Clone(now)
	if out == nil {
		out = map[string]float64{}
	}
	for k, v := range earlier {
		out[k] -= v
		if out[k] == 0 {
			delete(out, k)
		}
	}
	return out
}

// ScrapeActions reads the action counter from a server's Prometheus page.
func ScrapeActions(ctx context.Context, url string) (Actions, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Actions{}, fmt.Errorf("reading the server's metrics: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Actions{}, fmt.Errorf("reading the server's metrics at %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return Actions{}, fmt.Errorf("reading the server's metrics at %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return Actions{}, fmt.Errorf("reading the server's metrics at %s: %s", url, resp.Status)
	}
	return ParseActions(string(body)), nil
}

// SettledActions reads the counter until two readings a reporting interval apart agree: the server
// publishes its metrics about once a second, so a reading taken as a session ends can miss its
// last actions.
func SettledActions(ctx context.Context, url string) (Actions, error) {
	prev, err := ScrapeActions(ctx, url)
	if err != nil {
		return Actions{}, err
	}
	for {
		select {
		case <-ctx.Done():
			return Actions{}, fmt.Errorf("waiting for the action counter to settle: %w", ctx.Err())
		case <-time.After(settleInterval):
		}
		cur, err := ScrapeActions(ctx, url)
		if err != nil {
			return Actions{}, err
		}
		if cur.Total == prev.Total {
			return cur, nil
		}
		prev = cur
	}
}

// settleInterval is longer than the server's metrics reporting interval.
const settleInterval = 2 * time.Second

// ParseActions sums the `action` series of a Prometheus text page by their action_type label, and
// the frontend's `service_requests` by their operation label.
func ParseActions(page string) Actions {
	out := Actions{ByType: map[string]float64{}, Calls: map[string]float64{}}
	for _, line := range strings.Split(page, "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		switch name {
		case "action", "action_total":
			out.Total += v
			out.ByType[label(labels, "action_type")] += v
		case "service_requests", "service_requests_total":
			if label(labels, "service_name") == "frontend" {
				out.Calls[label(labels, "operation")] += v
			}
		}
	}
	return out
}

// label is one label's value from a Prometheus label list.
func label(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k == name {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}
