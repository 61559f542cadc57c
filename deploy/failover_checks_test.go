package deploy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// effectLine is one line of the workers' side-effect log: a tool execution about to happen.
type effectLine struct {
	Workflow string    `json:"workflow"`
	Activity string    `json:"activity"`
	Attempt  int32     `json:"attempt"`
	Session  string    `json:"session"`
	CallID   string    `json:"call_id"`
	Tool     string    `json:"tool"`
	Time     time.Time `json:"time"`
}

func (e effectLine) key() string { return e.Workflow + "#" + e.Activity }

// readEffects reads the side-effect log; a line that does not parse means two workers tore a line.
func readEffects(path string) ([]effectLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening the side-effect log: %w", err)
	}
	defer f.Close()
	var out []effectLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e effectLine
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("a torn line in the side-effect log %q: %w", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// countEffects is the number of lines in the side-effect log so far (zero before the first).
func countEffects(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}

// duplicates lists the tool activities (workflow and activity ID) that were executed more than once.
func duplicates(effects []effectLine) []string {
	seen := map[string]int{}
	var dups []string
	for _, e := range effects {
		if seen[e.key()]++; seen[e.key()] == 2 {
			dups = append(dups, e.key())
		}
	}
	return dups
}

// sample is one line of a Prometheus text exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// samples is a scrape of /metrics.
type samples []sample

// sum adds up the samples of a metric whose labels pass keep (nil keeps all).
func (ss samples) sum(name string, keep func(map[string]string) bool) float64 {
	var total float64
	for _, s := range ss {
		if s.name == name && (keep == nil || keep(s.labels)) {
			total += s.value
		}
	}
	return total
}

// outcomeIn keeps samples whose outcome label is one of outcomes.
func outcomeIn(outcomes ...string) func(map[string]string) bool {
	return func(l map[string]string) bool { return slices.Contains(outcomes, l["outcome"]) }
}

// scrape fetches a worker's /metrics.
func scrape(ctx context.Context, url string) (samples, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", url, err)
	}
	return parseExposition(string(body)), nil
}

// labelPair matches one name="value" pair of a sample's label set.
var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// parseExposition reads the samples of a Prometheus text exposition, skipping comments.
func parseExposition(text string) samples {
	var out samples
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s := sample{labels: map[string]string{}}
		rest := line
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			s.name, rest = line[:i], line[i:]
		}
		if strings.HasPrefix(rest, "{") {
			j := strings.LastIndexByte(rest, '}')
			if j < 0 {
				continue
			}
			for _, m := range labelPair.FindAllStringSubmatch(rest[1:j], -1) {
				s.labels[m[1]] = m[2]
			}
			rest = rest[j+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		s.value = v
		out = append(out, s)
	}
	return out
}

// listByStatus runs `temporal workflow list --query 'KeelStatus="status"'` against the cluster
// and returns the workflow IDs it prints.
func listByStatus(ctx context.Context, cli, address, status string) ([]string, error) {
	query := fmt.Sprintf("KeelStatus=%q", status)
	cmd := exec.CommandContext(ctx, cli, "workflow", "list", "--address", address,
		"--query", query, "--output", "jsonl")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		return nil, fmt.Errorf("temporal workflow list --query %s: %w: %s", query, err, stderr)
	}
	var ids []string
	for line := range strings.Lines(string(out)) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var w struct {
			Execution struct {
				WorkflowID string `json:"workflowId"`
			} `json:"execution"`
		}
		if err := json.Unmarshal([]byte(line), &w); err != nil {
			return nil, fmt.Errorf("a line of temporal workflow list: %q: %w", line, err)
		}
		ids = append(ids, w.Execution.WorkflowID)
	}
	return ids, nil
}
