package testserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// dockerHost is the Docker engine's address: DOCKER_HOST, else the usual socket.
func dockerHost() string {
	if host := os.Getenv("DOCKER_HOST"); host != "" {
		return host
	}
	return "unix:///var/run/docker.sock"
}

// dockerUp reports whether a Docker engine answers. It decides within a second because most
// machines without Docker go on to reqlite, and testcontainers' own probing retries for much
// longer and logs every attempt.
func dockerUp() bool {
	u, err := url.Parse(dockerHost())
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

// The runner is a module of its own (dockerrun, beside this file; see runnerDir) so that
// testcontainers, and the Docker client, moby and OpenTelemetry modules it brings, stay out
// of this module's go.mod and so out of the go.sum of every program that uses the library.

// addrPrefix starts the line on which the runner gives the server's address (see
// dockerrun/main.go).
const addrPrefix = "rethinkdb "

// defaultImage is the image the runner starts without RJQ_TEST_IMAGE.
const defaultImage = "rethinkdb:2.4"

// image is the image the runner starts: RJQ_TEST_IMAGE, else rethinkdb:2.4.
func image() string {
	if s := os.Getenv("RJQ_TEST_IMAGE"); s != "" {
		return s
	}
	return defaultImage
}

// noReaper is testcontainers' variable that runs it without its reaper container.
const noReaper = "TESTCONTAINERS_RYUK_DISABLED"

// startContainer starts the image by running the runner with go run, which prints the
// address once the server accepts connections. The runner removes the container when its
// standard input closes: at stop, or when this binary dies however it dies; testcontainers'
// reaper removes it too if the runner dies first. When the reaper itself cannot start (its
// image cannot be pulled: offline, a registry outage), it runs once more without it, and
// says so.
func startContainer() (Server, func(), error) {
	dir, err := runnerDir()
	if err != nil {
		return Server{}, nil, err
	}
	s, stop, err := runContainer(dir)
	if err != nil && os.Getenv(noReaper) == "" && strings.Contains(err.Error(), "reaper") {
		note("testcontainers' reaper did not start (%s); starting the container without it, the runner removes it itself", reason(err))
		s, stop, err = runContainer(dir, noReaper+"=true")
	}
	if err != nil {
		return Server{}, nil, err
	}
	s.reqlite, err = probeReqlite(s.Addr)
	if err != nil {
		stop()
		return Server{}, nil, fmt.Errorf("%s container at %s: %w", image(), s.Addr, err)
	}
	return s, stop, nil
}

// runContainer runs the runner module in dir, with env added to this process's
// environment; see startContainer.
func runContainer(dir string, env ...string) (Server, func(), error) {
	// go test puts its own go first on PATH for the test binary.
	goTool, err := exec.LookPath("go")
	if err != nil {
		return Server{}, nil, fmt.Errorf("start %s container: %w", image(), err)
	}
	cmd := exec.Command(goTool, "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Server{}, nil, err
	}
	out, errOut := &logBuf{}, &logBuf{}
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Start(); err != nil {
		return Server{}, nil, fmt.Errorf("start %s container: %w", image(), err)
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
			return Server{}, nil, &runnerError{exit: err, out: errOut.bytes()}
		case <-deadline:
			stop()
			return Server{}, nil, &runnerError{exit: errors.New("no server after 10m"), out: errOut.bytes()}
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

// runnerError is a runner that exited, or took too long, before giving an address.
type runnerError struct {
	exit error  // how it ended
	out  []byte // its standard error
}

func (e *runnerError) Error() string {
	return fmt.Sprintf("%s container runner: %v:\n%s", image(), e.exit, tail(e.out))
}

// reason is err in one line, for a note: a runner's own last error line (it prints
// "dockerrun: ..." last), else err's first line; at most 300 bytes either way.
func reason(err error) string {
	msg := err.Error()
	if re, ok := err.(*runnerError); ok {
		msg = re.exit.Error()
		for line := range strings.Lines(string(re.out)) {
			if rest, ok := strings.CutPrefix(line, "dockerrun: "); ok {
				msg = rest
			}
		}
	}
	msg, _, _ = strings.Cut(strings.TrimSpace(msg), "\n")
	if len(msg) > 300 {
		msg = msg[:297] + "..."
	}
	return msg
}
