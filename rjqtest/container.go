package rjqtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The server NewQueue starts when no RJQ_TEST_ADDR is set and a Docker engine answers: a
// container of RJQ_TEST_IMAGE (default rethinkdb:2.4), driven through the engine's HTTP API
// with the standard library only, so that this package brings no Docker or testcontainers
// modules into its users' builds.

// defaultImage is the image started without RJQ_TEST_IMAGE.
const defaultImage = "rethinkdb:2.4"

// readyLine is what RethinkDB prints once the driver port listens.
const readyLine = "Listening for client driver connections"

// ownerLabel marks the containers this package starts with "host:pid" of the test binary,
// so that a later binary removes those whose owner died without removing them.
const ownerLabel = "io.rjqgo.rjqtest.owner"

// docker is a client of one Docker engine's API.
type docker struct {
	http *http.Client
	base string // http://docker or the engine's tcp URL
	host string // the host the engine's published ports answer on
}

// dockerClient returns a client of the engine DOCKER_HOST names (default the local
// socket), or an error when none answers within a second.
func dockerClient() (*docker, error) {
	addr := os.Getenv("DOCKER_HOST")
	if addr == "" {
		addr = "unix:///var/run/docker.sock"
	}
	u, err := url.Parse(addr)
	if err != nil {
		return nil, fmt.Errorf("DOCKER_HOST=%q: %w", addr, err)
	}
	d := &docker{base: "http://docker", host: "127.0.0.1"}
	switch u.Scheme {
	case "unix":
		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var nd net.Dialer
			return nd.DialContext(ctx, "unix", u.Path)
		}}
		d.http = &http.Client{Transport: tr}
	case "tcp":
		if os.Getenv("DOCKER_TLS_VERIFY") != "" {
			return nil, errors.New("a Docker engine behind TLS (DOCKER_TLS_VERIFY): set RJQ_TEST_ADDR to a server instead")
		}
		d.http = &http.Client{}
		d.base = "http://" + u.Host
		d.host = u.Hostname()
	default:
		return nil, fmt.Errorf("DOCKER_HOST=%q: only unix:// and tcp:// engines are supported", addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := d.call(ctx, http.MethodGet, "/_ping", nil, nil); err != nil {
		return nil, fmt.Errorf("no Docker engine answers at %s: %w", addr, err)
	}
	return d, nil
}

// call sends a request to the engine and decodes its JSON answer into out (when not nil).
func (d *docker) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var msg struct{ Message string }
		if json.Unmarshal(data, &msg) == nil && msg.Message != "" {
			return fmt.Errorf("%s %s: %s (%d)", method, path, msg.Message, resp.StatusCode)
		}
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	// Pulls stream JSON objects; an error comes as one of them.
	if bytes.Contains(data, []byte(`"error"`)) && strings.HasPrefix(path, "/images/create") {
		return fmt.Errorf("pull: %s", lastLine(data))
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// container is a started RethinkDB container.
type container struct {
	d    *docker
	id   string
	addr string // host:port of its driver port
}

// startContainer starts image with its driver port published on a free port of the
// engine's host, and waits until the server listens.
func (d *docker) startContainer(ctx context.Context, image string) (*container, error) {
	d.sweep(ctx)
	if err := d.call(ctx, http.MethodGet, "/images/"+url.PathEscape(image)+"/json", nil, nil); err != nil {
		from, tag, _ := strings.Cut(image, ":")
		q := url.Values{"fromImage": {from}}
		if tag != "" {
			q.Set("tag", tag)
		}
		if err := d.call(ctx, http.MethodPost, "/images/create?"+q.Encode(), nil, nil); err != nil {
			return nil, fmt.Errorf("image %s is not on the engine and cannot be pulled: %w", image, err)
		}
	}
	host, _ := os.Hostname()
	create := map[string]any{
		"Image":        image,
		"Labels":       map[string]string{ownerLabel: host + ":" + strconv.Itoa(os.Getpid())},
		"ExposedPorts": map[string]any{"28015/tcp": map[string]any{}},
		"HostConfig": map[string]any{
			"AutoRemove":   true,
			"PortBindings": map[string]any{"28015/tcp": []map[string]string{{"HostPort": ""}}},
		},
	}
	var created struct{ ID string }
	if err := d.call(ctx, http.MethodPost, "/containers/create", create, &created); err != nil {
		return nil, err
	}
	c := &container{d: d, id: created.ID}
	if err := d.call(ctx, http.MethodPost, "/containers/"+c.id+"/start", nil, nil); err != nil {
		c.remove()
		return nil, err
	}
	var info struct {
		NetworkSettings struct {
			Ports map[string][]struct{ HostPort string }
		}
	}
	if err := d.call(ctx, http.MethodGet, "/containers/"+c.id+"/json", nil, &info); err != nil {
		c.remove()
		return nil, err
	}
	bound := info.NetworkSettings.Ports["28015/tcp"]
	if len(bound) == 0 {
		c.remove()
		return nil, errors.New("the engine published no port for 28015")
	}
	c.addr = net.JoinHostPort(d.host, bound[0].HostPort)
	if err := c.await(ctx); err != nil {
		c.remove()
		return nil, err
	}
	return c, nil
}

// await waits for the server's ready line in the container's output.
func (c *container) await(ctx context.Context) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.d.base+"/containers/"+c.id+"/logs?stdout=1&stderr=1", nil)
		if err != nil {
			return err
		}
		if resp, err := c.d.http.Do(req); err == nil {
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if bytes.Contains(out, []byte(readyLine)) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the server in container %.12s did not start: %w", c.id, ctx.Err())
		case <-tick.C:
		}
	}
}

// remove stops the container, which the engine then removes (AutoRemove).
func (c *container) remove() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if c.d.call(ctx, http.MethodPost, "/containers/"+c.id+"/stop?t=1", nil, nil) != nil {
		c.d.call(ctx, http.MethodDelete, "/containers/"+c.id+"?force=1", nil, nil)
	}
}

// sweep removes the containers of earlier test binaries of this host that died without
// removing theirs (a kill, a panic before Main's cleanup).
func (d *docker) sweep(ctx context.Context) {
	filters, _ := json.Marshal(map[string][]string{"label": {ownerLabel}})
	var list []struct {
		ID     string `json:"Id"`
		Labels map[string]string
	}
	if d.call(ctx, http.MethodGet, "/containers/json?all=1&filters="+url.QueryEscape(string(filters)), nil, &list) != nil {
		return
	}
	host, _ := os.Hostname()
	for _, c := range list {
		owner, pid, ok := strings.Cut(c.Labels[ownerLabel], ":")
		n, err := strconv.Atoi(pid)
		if !ok || owner != host || err != nil || alive(n) {
			continue
		}
		d.call(ctx, http.MethodDelete, "/containers/"+c.ID+"?force=1", nil, nil)
	}
}

// alive reports whether process pid exists on this host.
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
