package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/queue"
	"github.com/rjqgo/rethinkdb-job-queue/rjqweb"
)

// cmdWeb serves the dashboard of package rjqweb on an address of its own.
func cmdWeb(ctx context.Context, c config, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("web", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	listen := fs.String("listen", "127.0.0.1:8090", "address to serve on")
	actions := fs.Bool("actions", false, "enable cancel, reanimate, remove, pause and resume buttons")
	prefix := fs.String("prefix", "/", "path to serve the dashboard under, such as /jobs/")
	token := fs.String("token", os.Getenv("RJQ_WEB_TOKEN"), "require this bearer token (env RJQ_WEB_TOKEN)")
	names := fs.Int("metric-names", 0, "label the run metrics with the job name: this many names, the rest as other (0: no name label)")
	groups := fs.Int("metric-groups", 0, "label the run metrics with the job group: this many groups, the rest as other (0: no group label)")
	basic := fs.String("basic-auth", os.Getenv("RJQ_WEB_BASIC_AUTH"), "require HTTP basic authentication as user:pass (env RJQ_WEB_BASIC_AUTH)")
	if err := fs.Parse(args); err != nil {
		return usagef("web: %v", err)
	}
	if fs.NArg() > 0 {
		return usagef("web takes no arguments, got %q", strings.Join(fs.Args(), " "))
	}
	if *names < 0 || *groups < 0 {
		return usagef("web: --metric-names %d, --metric-groups %d: want 0 (no label) or more", *names, *groups)
	}
	auth, err := webAuth(*token, *basic)
	if err != nil {
		return err
	}
	mount, err := webMount(*prefix)
	if err != nil {
		return err
	}
	q, done, err := c.openWatching(ctx)
	if err != nil {
		return err
	}
	defer done()
	// The dashboard's own session, for its list pages and its run changefeed: closed after
	// the queue has stopped, which ends that feed.
	s, err := c.session(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	open, stopOpened := c.opener()
	defer stopOpened()
	h, err := rjqweb.New(rjqweb.Options{Queue: q, Session: s, Prefix: mount, Actions: *actions, Auth: auth,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)), Open: open, MetricNames: *names, MetricGroups: *groups})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return usagef("web: listen on %s: %v", *listen, err)
	}
	url := "http://" + l.Addr().String() + mount
	if c.json {
		// One line a script can read the address from, when --listen gave port 0.
		err = json.NewEncoder(out).Encode(map[string]any{"url": url, "queue": c.queue, "actions": *actions, "auth": authName(*token, *basic)})
	} else {
		_, err = fmt.Fprintf(out, "rjq web: %s (queue %s, actions %v, auth %s)\n", url, c.queue, *actions, authName(*token, *basic))
	}
	if err != nil {
		_ = l.Close()
		return err
	}
	return serveUntil(ctx, l, h)
}

// webMount is the path --prefix serves the dashboard under: "/" or "/dir/".
func webMount(prefix string) (string, error) {
	dir := strings.TrimSuffix(prefix, "/")
	if dir == "" {
		return "/", nil
	}
	if !strings.HasPrefix(dir, "/") || path.Clean(dir) != dir || dir == "/" {
		return "", usagef("web: --prefix %q: want a clean absolute path such as /jobs/", prefix)
	}
	return dir + "/", nil
}

// serveUntil serves h on l until ctx ends, then shuts the server down gracefully.
func serveUntil(ctx context.Context, l net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// opener is the dashboard's Options.Open: it opens another queue of the database as rjq
// web opens its own, for the overview to link to, and stop stops every queue it opened.
func (c config) opener() (open func(context.Context, string) (*queue.Queue, error), stop func()) {
	var mu sync.Mutex
	var dones []func()
	open = func(ctx context.Context, name string) (*queue.Queue, error) {
		other := c
		other.queue = name
		q, done, err := other.openWatching(ctx)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		dones = append(dones, done)
		mu.Unlock()
		return q, nil
	}
	return open, func() {
		mu.Lock()
		defer mu.Unlock()
		for _, done := range dones {
			done()
		}
	}
}

// webAuth is the dashboard's Auth from --token and --basic-auth: either or both (a
// request passing either is admitted), or none.
func webAuth(token, basic string) (func(*http.Request) bool, error) {
	var checks []func(*http.Request) bool
	if token != "" {
		checks = append(checks, rjqweb.BearerToken(token))
	}
	if basic != "" {
		user, pass, ok := strings.Cut(basic, ":")
		if !ok || user == "" || pass == "" {
			return nil, usagef("web: --basic-auth (or RJQ_WEB_BASIC_AUTH): want user:pass, both non-empty")
		}
		checks = append(checks, rjqweb.BasicAuth(user, pass))
	}
	switch len(checks) {
	case 0:
		return nil, nil
	case 1:
		return checks[0], nil
	}
	return func(req *http.Request) bool {
		// Both run: the basic check, last, leaves the challenge of the 401, which a
		// browser answers by asking for a user name and password.
		ok := false
		for _, check := range checks {
			ok = check(req) || ok
		}
		return ok
	}, nil
}

// authName says which authentication the dashboard asks for.
func authName(token, basic string) string {
	var names []string
	if token != "" {
		names = append(names, "bearer token")
	}
	if basic != "" {
		names = append(names, "basic")
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, " or ")
}
