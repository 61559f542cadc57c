package tools

import (
	"fmt"
	"strings"
	"sync"
)

// capture keeps the first and the last part of a command's output, up to limit bytes in all, and
// counts what it dropped in between: the start of a failing build and the end of a failing test
// run are both worth keeping.
type capture struct {
	mu    sync.Mutex
	limit int
	head  []byte
	tail  []byte
	total int
}

func newCapture(limit int) *capture { return &capture{limit: limit} }

// Write keeps what fits and never fails, so the command never blocks on its output.
func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += len(p)
	headCap := c.limit / 2
	rest := p
	if room := headCap - len(c.head); room > 0 {
		n := min(room, len(rest))
		c.head = append(c.head, rest[:n]...)
		rest = rest[n:]
	}
	if len(rest) == 0 {
		return len(p), nil
	}
	tailCap := c.limit - headCap
	c.tail = append(c.tail, rest...)
	if len(c.tail) > tailCap {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-tailCap:]...)
	}
	return len(p), nil
}

// String is the kept output, with a note where bytes were cut.
func (c *capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	cut := c.total - len(c.head) - len(c.tail)
	if cut <= 0 {
		return strings.ToValidUTF8(string(c.head)+string(c.tail), "?")
	}
	return strings.ToValidUTF8(string(c.head), "?") +
		fmt.Sprintf("\n[cut: %d bytes of output from the middle are not shown; %d bytes in all]\n", cut, c.total) +
		strings.ToValidUTF8(string(c.tail), "?")
}
