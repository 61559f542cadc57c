package tools

import "sync"

// injected remembers which sessions already had their injected write failure, so that exactly the
// first write_file of a session fails. The memory is per process, which is what a demo needs.
var injected = &onceSet{seen: map[string]bool{}}

// onceSet answers true the first time it sees a key and false afterwards; it is safe for
// concurrent use.
type onceSet struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (s *onceSet) first(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[key] {
		return false
	}
	s.seen[key] = true
	return true
}
