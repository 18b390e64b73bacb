package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// The dashboard's calls at scale: -scale starts `rjq web` (built from ./cmd/rjq, so run
// rjqbench from the repository's root) on the filled table and times each API call and
// a /metrics scrape, as an operator's browser and Prometheus make them.

var (
	rjqOnce sync.Once
	rjqBin  string
	rjqErr  error
)

// rjqBinary builds rjq once per run.
func rjqBinary() (string, error) {
	rjqOnce.Do(func() {
		rjqBin = filepath.Join(os.TempDir(), fmt.Sprintf("rjqbench-rjq-%d", os.Getpid()))
		out, err := exec.Command("go", "build", "-o", rjqBin, "./cmd/rjq").CombinedOutput()
		if err != nil {
			rjqErr = fmt.Errorf("build ./cmd/rjq (run rjqbench from the repository's root): %v: %s", err, out)
		}
	})
	return rjqBin, rjqErr
}

// dashboardCall is the median time of one dashboard call.
type dashboardCall struct {
	path string
	url  string // when it differs from path
	took time.Duration
}

// dashboardTimes serves db's default queue with `rjq web` and returns the median of five
// calls of each API path, and of /metrics.
func dashboardTimes(ctx context.Context, addr, db string) ([]dashboardCall, error) {
	bin, err := rjqBinary()
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	listen := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--addr", addr, "--db", db, "web", "--listen", listen)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	base := "http://" + listen
	var older string // the cursor of the completed list's second page
	get := func(path string) ([]byte, time.Duration, error) {
		start := time.Now()
		res, err := http.Get(base + path)
		if err != nil {
			return nil, 0, err
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err == nil && res.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %s: %s", path, res.Status, strings.TrimSpace(string(body)))
		}
		if o := res.Header.Get("X-Rjq-Older"); o != "" && path == "/api/jobs?status=completed" {
			older = o
		}
		return body, time.Since(start), err
	}
	if err := awaitAnswer(get); err != nil {
		return nil, err
	}
	body, _, err := get("/api/jobs?status=completed")
	if err != nil {
		return nil, err
	}
	var finished []struct{ ID string }
	if err := json.Unmarshal(body, &finished); err != nil {
		return nil, fmt.Errorf("/api/jobs: %w", err)
	}
	calls := dashboardCalls(older, finished)
	for i, c := range calls {
		if calls[i].took, err = medianOf(5, func() (time.Duration, error) {
			_, took, err := get(cmp.Or(c.url, c.path))
			return took, err
		}); err != nil {
			return nil, err
		}
	}
	return calls, nil
}

// dashboardCalls are the calls the overview, the queue page and the job page make, and
// the searches; older is the cursor of the completed list's second page, finished that
// list's first page.
func dashboardCalls(older string, finished []struct{ ID string }) []dashboardCall {
	calls := []dashboardCall{{path: "/"}, {path: "/api/queues"}, {path: "/api/summary"}, {path: "/api/side"},
		{path: "/api/jobs"}, {path: "/api/jobs?status=waiting"}, {path: "/api/jobs?status=completed"},
		{path: "/api/jobs?status=cancelled"}, {path: "/api/jobs?status=terminated"}, {path: "/api/jobs?status=failed"},
		{path: "/api/jobs?status=completed&field=n&value=7"}, {path: "/api/jobs?status=completed&text=retrieved"},
		{path: "/api/jobs?status=cancelled&text=no+such+text"}, {path: "/api/throughput"}, {path: "/metrics"}}
	if older != "" {
		calls = append(calls, dashboardCall{path: "/api/jobs?status=completed&cursor={older}", url: "/api/jobs?status=completed&cursor=" + url.QueryEscape(older)})
	}
	if len(finished) > 0 {
		calls = append(calls, dashboardCall{path: "/api/jobs/{id}", url: "/api/jobs/" + finished[0].ID})
	}
	return calls
}

// getter GETs a path of the dashboard and times it.
type getter func(path string) ([]byte, time.Duration, error)

// awaitAnswer waits up to 30 s for the dashboard to answer.
func awaitAnswer(get getter) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, _, err := get("/api/summary")
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("rjq web did not answer: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// medianOf runs timed n times and returns the median of what it took.
func medianOf(n int, timed func() (time.Duration, error)) (time.Duration, error) {
	times := make([]time.Duration, 0, n)
	for range n {
		took, err := timed()
		if err != nil {
			return 0, err
		}
		times = append(times, took)
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}

// slowest formats the slowest call of calls and every call's time.
func slowest(calls []dashboardCall) string {
	if len(calls) == 0 {
		return "-"
	}
	worst := slices.MaxFunc(calls, func(a, b dashboardCall) int { return int(a.took - b.took) })
	parts := make([]string, len(calls))
	for i, c := range calls {
		parts[i] = fmt.Sprintf("%s %s", c.path, ms(c.took))
	}
	return fmt.Sprintf("%s (%s; %s)", ms(worst.took), worst.path, strings.Join(parts, ", "))
}
