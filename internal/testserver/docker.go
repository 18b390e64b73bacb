package testserver

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// dockerUp reports whether a Docker engine answers. It decides within a second because most
// machines without Docker go on to reqlite, and testcontainers' own probing retries for much
// longer and logs every attempt.
func dockerUp() bool {
	host := os.Getenv("DOCKER_HOST")
	if host == "" {
		host = "unix:///var/run/docker.sock"
	}
	u, err := url.Parse(host)
	if err != nil {
		return false
	}
	network, addr := "tcp", u.Host
	switch {
	case u.Scheme == "unix":
		network, addr = "unix", u.Path
	case u.Scheme != "tcp":
		return false
	case os.Getenv("DOCKER_TLS_VERIFY") != "":
		// Pinging needs the client certificates; an open port is the best evidence here.
		c, err := net.DialTimeout(network, addr, 300*time.Millisecond)
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		d := net.Dialer{Timeout: 300 * time.Millisecond}
		return d.DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	c := http.Client{Transport: tr, Timeout: 500 * time.Millisecond}
	resp, err := c.Get("http://docker/_ping")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16))
	return err == nil && resp.StatusCode == http.StatusOK && string(body) == "OK"
}

// startContainer starts rethinkdb:2.4. testcontainers' reaper removes the container even
// when the test binary dies before stopping it.
func startContainer() (Server, func(), error) {
	// Long enough for pulling the image the first time.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:        "rethinkdb:2.4",
			ExposedPorts: []string{"28015/tcp"},
			WaitingFor:   wait.ForListeningPort("28015/tcp"),
		},
		Started: true,
	})
	stop := func() { testcontainers.TerminateContainer(c) }
	if err != nil {
		stop()
		return Server{}, nil, fmt.Errorf("start rethinkdb:2.4 container: %w", err)
	}
	host, err := c.Host(ctx)
	if err != nil {
		stop()
		return Server{}, nil, fmt.Errorf("rethinkdb container host: %w", err)
	}
	port, err := c.MappedPort(ctx, "28015/tcp")
	if err != nil {
		stop()
		return Server{}, nil, fmt.Errorf("rethinkdb container port: %w", err)
	}
	addr := net.JoinHostPort(host, port.Port())
	return Server{Addr: addr, Host: host, Port: int(port.Num()), Kind: Container}, stop, nil
}
