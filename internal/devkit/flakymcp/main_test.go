package main

import (
	"context"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name    string
		ctx     context.Context
		addr    string
		wantErr bool
	}{
		{"a bad address fails", context.Background(), "not-an-address", true},
		{"HTTP stops when the context ends", cancelled, "127.0.0.1:0", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- run(tc.ctx, tc.addr) }()
			select {
			case err := <-done:
				if (err != nil) != tc.wantErr {
					t.Fatalf("run: %v, want error %v", err, tc.wantErr)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("run did not return")
			}
		})
	}
}
