// Command dockerrun starts a RethinkDB container for the integration tests and keeps it
// until its standard input closes or it gets SIGINT or SIGTERM, then removes it.
//
// The image is rethinkdb:2.4, or the one RJQ_TEST_IMAGE names (a mirror, a pinned digest, a
// local build). An image already on the engine is used as it is; another is pulled. The
// server must print RethinkDB's "Listening for client driver connections" line and serve
// the driver port 28015 (reqlite, packed by ../mkimage, does both). testcontainers reads its
// own variables too: TESTCONTAINERS_RYUK_DISABLED=true runs without the reaper (this
// runner removes the container itself), TESTCONTAINERS_HOST_OVERRIDE names the host the
// tests dial.
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
	"strings"
	"syscall"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// addrPrefix starts the address line; internal/testing/testserver parses it (docker.go there).
const addrPrefix = "rethinkdb "

// defaultImage is the image without RJQ_TEST_IMAGE.
const defaultImage = "rethinkdb:2.4"

// readyLine is what RethinkDB (and reqlite) print once the driver port listens. Waiting for
// it, and not only for the mapped port, matters: Docker's proxy accepts connections on the
// mapped port before the server inside listens.
const readyLine = "Listening for client driver connections"

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

	if os.Getenv(hostOverride) == "" && engineHere() {
		os.Setenv(hostOverride, "127.0.0.1")
	}
	image := os.Getenv("RJQ_TEST_IMAGE")
	if image == "" {
		image = defaultImage
	}
	// Long enough for pulling the image the first time.
	startCtx, cancelStart := context.WithTimeout(ctx, 5*time.Minute)
	defer cancelStart()
	c, err := testcontainers.GenericContainer(startCtx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:        image,
			ExposedPorts: []string{"28015/tcp"},
			WaitingFor: wait.ForAll(
				wait.ForLog(readyLine).WithStartupTimeout(time.Minute),
				wait.ForListeningPort("28015/tcp"),
			),
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
		return fmt.Errorf("start %s container: %w", image, err)
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

// hostOverride is testcontainers' variable for the host that reaches mapped ports.
const hostOverride = "TESTCONTAINERS_HOST_OVERRIDE"

// engineHere reports whether the Docker engine runs in this network namespace: it is
// reached through a local socket and its default bridge, docker0, is one of our interfaces.
// Then its mapped ports answer on loopback. Without this, testcontainers, when it finds
// itself inside a container (a CI sandbox, say), dials the bridge's gateway, which may not
// route here at all.
func engineHere() bool {
	if h := os.Getenv("DOCKER_HOST"); h != "" && !strings.HasPrefix(h, "unix://") {
		return false
	}
	_, err := net.InterfaceByName("docker0")
	return err == nil
}
