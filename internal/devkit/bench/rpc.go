package bench

import (
	"context"
	"path"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
)

// RPCs records the time of every unary call a client makes to the server, by method, so a
// turn's cost can be split into the round trips the worker makes.
type RPCs struct {
	mu sync.Mutex
	by map[string][]time.Duration
}

// Intercept is a gRPC client interceptor that records each call. Long polls are left out: they
// wait for work and say nothing about its cost.
func (r *RPCs) Intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	name := path.Base(method)
	if strings.HasPrefix(name, "Poll") {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by = map[string][]time.Duration{}
	}
	r.by[name] = append(r.by[name], time.Since(start))
	return err
}

// Take returns the calls recorded since the last Take and forgets them.
func (r *RPCs) Take() map[string][]time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.by
	r.by = nil
	return out
}
