package testserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
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

// runnerDir is the module that starts the container, relative to this module's root. It
// is a module of its own so that testcontainers, and the Docker client, moby and
// OpenTelemetry modules it brings, stay out of this module's go.mod and so out of the
// go.sum of every program that uses the library.
var runnerDir = filepath.Join("internal", "testserver", "dockerrun")

// addrPrefix starts the line on which the runner gives the server's address (see
// dockerrun/main.go).
const addrPrefix = "rethinkdb "

// startContainer starts rethinkdb:2.4 by running the runner with go run, which prints the
// address once the server accepts connections. The runner removes the container when its
// standard input closes: at stop, or when this binary dies however it dies; testcontainers'
// reaper removes it too if the runner dies first.
func startContainer() (Server, func(), error) {
	dir, err := findUp(runnerDir, "go.mod")
	if err != nil {
		return Server{}, nil, err
	}
	return runContainer(dir)
}

// runContainer runs the runner module in dir; see startContainer.
func runContainer(dir string) (Server, func(), error) {
	// go test puts its own go first on PATH for the test binary.
	goTool, err := exec.LookPath("go")
	if err != nil {
		return Server{}, nil, fmt.Errorf("start rethinkdb:2.4 container: %w", err)
	}
	cmd := exec.Command(goTool, "run", ".")
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Server{}, nil, err
	}
	out, errOut := &logBuf{}, &logBuf{}
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Start(); err != nil {
		return Server{}, nil, fmt.Errorf("start rethinkdb:2.4 container: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			<-exited
		}
	}

	// Long enough to build the runner and pull the image the first time.
	deadline := time.After(10 * time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			return Server{}, nil, fmt.Errorf("rethinkdb container runner exited (%v):\n%s", err, tail(errOut.bytes()))
		case <-deadline:
			stop()
			return Server{}, nil, fmt.Errorf("rethinkdb container not started after 10m:\n%s", tail(errOut.bytes()))
		case <-tick.C:
			s, ok, err := parseAddr(out.bytes())
			if err != nil {
				stop()
				return Server{}, nil, fmt.Errorf("rethinkdb container runner: %w", err)
			}
			if ok {
				return s, stop, nil
			}
		}
	}
}

// parseAddr finds the runner's address line in its output so far. It reports false until a
// whole line has arrived.
func parseAddr(out []byte) (Server, bool, error) {
	for {
		line, rest, ok := bytes.Cut(out, []byte("\n"))
		if !ok {
			return Server{}, false, nil
		}
		out = rest
		addr, ok := strings.CutPrefix(strings.TrimSuffix(string(line), "\r"), addrPrefix)
		if !ok {
			continue // not the runner's: something go run or a library printed
		}
		host, p, err := net.SplitHostPort(addr)
		if err != nil {
			return Server{}, false, fmt.Errorf("address line %q: %w", line, err)
		}
		port, err := strconv.Atoi(p)
		if err != nil || port <= 0 || port > 65535 {
			return Server{}, false, fmt.Errorf("address line %q: bad port", line)
		}
		return Server{Addr: addr, Host: host, Port: port, Kind: Container}, true, nil
	}
}
