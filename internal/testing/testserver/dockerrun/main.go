// Command dockerrun starts a rethinkdb:2.4 container for the integration tests and keeps it
// until its standard input closes or it gets SIGINT or SIGTERM, then removes it.
//
// It is a module of its own so that testcontainers and the Docker client it brings (moby,
// OpenTelemetry and more) stay out of the library's go.mod and out of its users' go.sum.
// internal/testing/testserver runs it with `go run .` in this directory when a Docker engine
// answers, reads the address line, and closes the pipe to its standard input to stop it;
// the pipe also closes when the test binary dies, however it dies.
//
// Output: one line "rethinkdb HOST:PORT" on standard output once the server accepts
// connections; testcontainers' log and any error go to standard error.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// addrPrefix starts the address line; internal/testing/testserver parses it (docker.go there).
const addrPrefix = "rethinkdb "

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "dockerrun:", err)
		os.Exit(1)
	}
}

func run() error {
	// Stop on a signal or when the parent closes (or loses) our standard input.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()

	// Long enough for pulling the image the first time.
	startCtx, cancelStart := context.WithTimeout(ctx, 5*time.Minute)
	defer cancelStart()
	c, err := testcontainers.GenericContainer(startCtx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:        "rethinkdb:2.4",
			ExposedPorts: []string{"28015/tcp"},
			WaitingFor:   wait.ForListeningPort("28015/tcp"),
		},
		Started: true,
	})
	// testcontainers' reaper removes the container too if this process dies before here.
	defer func() {
		if err := testcontainers.TerminateContainer(c); err != nil {
			fmt.Fprintln(os.Stderr, "dockerrun:", err)
		}
	}()
	if err != nil {
		return fmt.Errorf("start rethinkdb:2.4 container: %w", err)
	}
	host, err := c.Host(startCtx)
	if err != nil {
		return fmt.Errorf("rethinkdb container host: %w", err)
	}
	port, err := c.MappedPort(startCtx, "28015/tcp")
	if err != nil {
		return fmt.Errorf("rethinkdb container port: %w", err)
	}
	cancelStart()
	if _, err := fmt.Println(addrPrefix + net.JoinHostPort(host, port.Port())); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}
