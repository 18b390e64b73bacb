// Package env reads the examples' settings from the environment.
package env

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// ConnectOptions returns the server address in RJQ_ADDR (host:port), or nil for the
// default localhost:28015.
func ConnectOptions() (*queue.ConnectOptions, error) {
	addr := os.Getenv("RJQ_ADDR")
	if addr == "" {
		return nil, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("RJQ_ADDR=%q: want host:port: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("RJQ_ADDR=%q: bad port: %w", addr, err)
	}
	return &queue.ConnectOptions{Host: host, Port: p}, nil
}
