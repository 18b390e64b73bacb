package rjqweb

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

func TestMain(m *testing.M) { testserver.Main(m) }

// fixture is a queue on the test server with two dashboards of it mounted in one server,
// as a user would mount them: read-write at /jobs/ and read-only at /ro/, both behind
// basic authentication.
type fixture struct {
	t       *testing.T
	q       *queue.Queue
	session *r.Session
	db      string
	srv     *httptest.Server
	mounted map[string]*dashboard // by prefix
	waiting string                // the id of a job that the tests' writes must leave alone, or cancel
}

const testQueue = "dashboard"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	testserver.Get(t)
	f := &fixture{t: t, session: testserver.Session(t), db: testserver.DB(t)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q, err := queue.New(ctx, &queue.ConnectOptions{Session: f.session, DB: f.db},
		queuetest.Options(queue.Options{Name: testQueue, MasterInterval: -1, Heartbeat: -1}))
	require.NoError(t, err)
	f.q = q
	require.NoError(t, q.Ready(ctx))
	// A job for later: it stays waiting unless a test cancels it.
	added, err := q.AddJob(ctx, q.CreateJob("monthly").SetName("report").SetDateEnable(time.Now().Add(time.Hour)))
	require.NoError(t, err)
	f.waiting = added[0].ID

	auth := BasicAuth("ops", "pw")
	f.mounted = make(map[string]*dashboard)
	mux := http.NewServeMux()
	for prefix, actions := range map[string]bool{"/jobs/": true, "/ro/": false} {
		h, err := New(Options{Queue: q, Session: f.session, Prefix: prefix, Actions: actions, Auth: auth})
		require.NoError(t, err)
		mux.Handle(prefix, h)
		f.mounted[prefix] = h.(*dashboard)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "the application") })
	f.srv = httptest.NewServer(mux)
	// Cleanups run last first: the server closes, the queue stops, its dashboards' feeds
	// end, and then the session (registered first) closes.
	t.Cleanup(func() {
		f.srv.Close()
		require.NoError(t, q.Stop(context.Background()))
		for _, d := range f.mounted {
			select {
			case <-d.done:
			case <-time.After(10 * time.Second):
				t.Error("the dashboard's goroutines did not end when its queue stopped")
			}
		}
	})
	return f
}

// request is one request to the fixture's server.
type request struct {
	method, path string
	noAuth       bool              // send no credentials
	password     string            // instead of the right one
	header       map[string]string // Origin, Sec-Fetch-Site...
}

// do sends req and returns the response with its body read.
func (f *fixture) do(t *testing.T, req request) (*http.Response, string) {
	t.Helper()
	method := req.method
	if method == "" {
		method = http.MethodGet
	}
	hr, err := http.NewRequest(method, f.srv.URL+req.path, nil)
	require.NoError(t, err)
	if !req.noAuth {
		pass := req.password
		if pass == "" {
			pass = "pw"
		}
		hr.SetBasicAuth("ops", pass)
	}
	for k, v := range req.header {
		hr.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(hr)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(b)
}

// state is what the server holds of the queue: the waiting job's status and the State
// Document's state ("" when there is none).
func (f *fixture) state(t *testing.T) (job.Status, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var jobs []struct {
		Status string `rethinkdb:"status"`
	}
	table := r.DB(f.db).Table(testQueue)
	require.NoError(t, readAll(ctx, f.session, table.GetAll(f.waiting), &jobs))
	require.Len(t, jobs, 1)
	var docs []struct {
		State string `rethinkdb:"state"`
	}
	require.NoError(t, readAll(ctx, f.session, table.GetAll(job.StateDocumentID), &docs))
	state := ""
	if len(docs) > 0 {
		state = docs[0].State
	}
	return job.Status(jobs[0].Status), state
}

// Mounted under prefixes in a server of the application's: the page, its API and the
// metrics answer under each prefix, and only with credentials.
func TestMountedReads(t *testing.T) {
	f := newFixture(t)
	crossSite := map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://elsewhere.example"}
	for _, tc := range []struct {
		name     string
		req      request
		code     int
		contains string
	}{
		{"the page", request{path: "/jobs/"}, 200, "<title>rjq dashboard</title>"},
		{"the page read-only", request{path: "/ro/"}, 200, "<title>rjq dashboard</title>"},
		{"the prefix without its slash (the mux's redirect)", request{path: "/jobs", noAuth: true}, http.StatusTemporaryRedirect, ""},
		{"the summary", request{path: "/jobs/api/summary"}, 200, `"queue":"` + testQueue + `"`},
		{"the summary says read-only", request{path: "/ro/api/summary"}, 200, `"actions":false`},
		{"the job list", request{path: "/jobs/api/jobs?status=waiting"}, 200, f.waiting},
		{"a job", request{path: "/jobs/api/jobs/" + f.waiting}, 200, `"priorityName":"normal"`},
		{"a job id that is none", request{path: "/jobs/api/jobs/nope"}, 400, "not a job id"},
		{"an unknown status", request{path: "/jobs/api/jobs?status=lost"}, 400, "unknown status"},
		{"the chart", request{path: "/jobs/api/throughput"}, 200, `"minutes":[`},
		{"the metrics", request{path: "/jobs/metrics"}, 200, `rjq_jobs{queue="` + testQueue + `",status="waiting"} 1`},
		// The fixture's one job is due in an hour: nothing is waiting yet.
		{"the oldest waiting job", request{path: "/jobs/metrics"}, 200, `rjq_queue_oldest_waiting_seconds{queue="` + testQueue + `"} 0.000`},
		{"the pause", request{path: "/jobs/metrics"}, 200, `rjq_queue_paused{queue="` + testQueue + `"} 0`},
		{"an unknown path under the prefix", request{path: "/jobs/nothing"}, 404, ""},
		{"the application beside it", request{path: "/", noAuth: true}, 200, "the application"},
		{"a read from another site", request{path: "/jobs/api/summary", header: crossSite}, 200, `"paused":false`},

		{"the page without credentials", request{path: "/jobs/", noAuth: true}, 401, ""},
		{"the page with a wrong password", request{path: "/jobs/", password: "guess"}, 401, ""},
		{"the API without credentials", request{path: "/jobs/api/jobs", noAuth: true}, 401, ""},
		{"the metrics without credentials", request{path: "/ro/metrics", noAuth: true}, 401, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := f.do(t, tc.req)
			assert.Equal(t, tc.code, res.StatusCode, body)
			assert.Contains(t, body, tc.contains)
			switch res.StatusCode {
			case http.StatusUnauthorized:
				assert.Equal(t, `Basic realm="rjq", charset="UTF-8"`, res.Header.Get("WWW-Authenticate"))
				assert.NotContains(t, body, f.waiting)
			case http.StatusTemporaryRedirect:
				assert.Equal(t, "/jobs/", res.Header.Get("Location"))
			}
		})
	}
	res, _ := f.do(t, request{path: "/jobs/"})
	assert.Equal(t, "frame-ancestors 'self'", res.Header.Get("Content-Security-Policy"), "no other site may frame the buttons")

	t.Run("served without a mux", func(t *testing.T) {
		h := f.mounted["/jobs/"]
		for _, tc := range []struct {
			path, user, location string
			code                 int
		}{
			{"/jobs?status=failed", "ops", "jobs/?status=failed", http.StatusMovedPermanently},
			{"/jobs", "", "", http.StatusUnauthorized},
			{"/jobsite/", "ops", "", http.StatusNotFound},
			{"/", "ops", "", http.StatusNotFound},
		} {
			req := httptest.NewRequest("GET", tc.path, nil)
			if tc.user != "" {
				req.SetBasicAuth(tc.user, "pw")
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			assert.Equal(t, tc.code, w.Code, tc.path)
			assert.Equal(t, tc.location, w.Header().Get("Location"), tc.path)
		}
	})
}

// The write endpoints: refused (and nothing changed in the database) without
// credentials, from another site, and with actions off; done when asked by the page
// itself with actions on.
func TestMountedWrites(t *testing.T) {
	f := newFixture(t)
	cancelJob := "/api/jobs/" + f.waiting + "/cancel"
	sameOrigin := map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": f.srv.URL}
	for _, tc := range []struct {
		name string
		req  request
		code int
	}{
		{"pause without credentials", request{path: "/jobs/api/pause", noAuth: true}, 401},
		{"cancel without credentials", request{path: "/jobs" + cancelJob, noAuth: true, header: sameOrigin}, 401},
		{"pause from another origin", request{path: "/jobs/api/pause", header: map[string]string{"Origin": "https://evil.example"}}, 403},
		{"cancel from another origin", request{path: "/jobs" + cancelJob, header: map[string]string{"Origin": "https://evil.example"}}, 403},
		{"pause from another site", request{path: "/jobs/api/pause", header: map[string]string{"Sec-Fetch-Site": "cross-site"}}, 403},
		{"cancel from another site", request{path: "/jobs" + cancelJob, header: map[string]string{"Sec-Fetch-Site": "cross-site"}}, 403},
		{"remove from a sibling subdomain", request{path: "/jobs/api/jobs/" + f.waiting + "/remove", header: map[string]string{"Sec-Fetch-Site": "same-site"}}, 403},
		{"pause with actions off", request{path: "/ro/api/pause", header: sameOrigin}, 403},
		{"cancel with actions off", request{path: "/ro" + cancelJob, header: sameOrigin}, 403},
		{"remove with actions off, no browser headers", request{path: "/ro/api/jobs/" + f.waiting + "/remove"}, 403},
		{"an unknown action", request{path: "/jobs/api/jobs/" + f.waiting + "/explode", header: sameOrigin}, 404},
		{"an unknown global action", request{path: "/jobs/api/explode", header: sameOrigin}, 404},
		{"cancel by GET", request{method: "GET", path: "/jobs" + cancelJob, header: sameOrigin}, 405},
		{"a bulk remove without credentials", request{path: "/jobs/api/bulk/remove?status=completed&olderThan=0s", noAuth: true}, 401},
		{"a bulk remove from another origin", request{path: "/jobs/api/bulk/remove?status=completed&olderThan=0s", header: map[string]string{"Origin": "https://evil.example"}}, 403},
		{"a bulk reanimate with actions off", request{path: "/ro/api/bulk/reanimate?status=failed", header: sameOrigin}, 403},
		{"a bulk remove of waiting jobs", request{path: "/jobs/api/bulk/remove?status=waiting&olderThan=0s", header: sameOrigin}, 400},
		{"a bulk reanimate of waiting jobs", request{path: "/jobs/api/bulk/reanimate?status=waiting", header: sameOrigin}, 400},
		{"a bulk remove without an age", request{path: "/jobs/api/bulk/remove?status=completed", header: sameOrigin}, 400},
		{"an unknown bulk action", request{path: "/jobs/api/bulk/explode?status=failed", header: sameOrigin}, 404},
		{"remove a limit with actions off", request{path: "/ro/api/limits/x/remove", header: sameOrigin}, 403},
		{"remove a schedule from another origin", request{path: "/jobs/api/schedules/x/remove", header: map[string]string{"Origin": "https://evil.example"}}, 403},
		{"remove a schedule there is not", request{path: "/jobs/api/schedules/nosuch/remove", header: sameOrigin}, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.req.method == "" {
				tc.req.method = http.MethodPost
			}
			res, body := f.do(t, tc.req)
			assert.Equal(t, tc.code, res.StatusCode, body)
			status, state := f.state(t)
			assert.Equal(t, job.Waiting, status, "the job is untouched in the database")
			assert.NotEqual(t, "paused", state, "no pause in the database")
			assert.False(t, f.q.Paused())
		})
	}

	t.Run("pause and resume from the page", func(t *testing.T) {
		res, body := f.do(t, request{method: http.MethodPost, path: "/jobs/api/pause", header: sameOrigin})
		require.Equal(t, 200, res.StatusCode, body)
		assert.JSONEq(t, `{"paused":true}`, body)
		assert.True(t, f.q.Paused())
		_, state := f.state(t)
		assert.Equal(t, "paused", state, "the State Document says paused")
		_, body = f.do(t, request{path: "/ro/api/summary"})
		assert.Contains(t, body, `"paused":true`)
		_, body = f.do(t, request{path: "/ro/metrics"})
		assert.Contains(t, body, "# TYPE rjq_queue_paused gauge")
		assert.Contains(t, body, `rjq_queue_paused{queue="`+testQueue+`"} 1`)

		// A client that is not a browser sends no Origin: it passes too.
		res, body = f.do(t, request{method: http.MethodPost, path: "/jobs/api/resume"})
		require.Equal(t, 200, res.StatusCode, body)
		assert.False(t, f.q.Paused())
		_, state = f.state(t)
		assert.Equal(t, "active", state)
		_, body = f.do(t, request{path: "/ro/metrics"})
		assert.Contains(t, body, `rjq_queue_paused{queue="`+testQueue+`"} 0`)
	})

	t.Run("cancel from the page", func(t *testing.T) {
		res, body := f.do(t, request{method: http.MethodPost, path: "/jobs" + cancelJob, header: sameOrigin})
		require.Equal(t, 200, res.StatusCode, body)
		status, _ := f.state(t)
		assert.Equal(t, job.Cancelled, status)
	})
}

// The page's event stream, under the prefix, tells of a job added elsewhere.
func TestMountedEvents(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/ro/api/events", nil)
	require.NoError(t, err)
	req.SetBasicAuth("ops", "pw")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	assert.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	lines := bufio.NewScanner(res.Body)
	require.True(t, lines.Scan())
	require.Equal(t, ": connected", lines.Text())

	added, err := f.q.AddJob(ctx, f.q.CreateJob("to ann"))
	require.NoError(t, err)
	for lines.Scan() {
		data, ok := strings.CutPrefix(lines.Text(), "data: ")
		if !ok {
			continue
		}
		var e struct{ Type, Job string }
		require.NoError(t, json.Unmarshal([]byte(data), &e))
		if e.Type == string(queue.EventAdded) && e.Job == added[0].ID {
			return
		}
	}
	t.Fatalf("no added event for the job: %v", lines.Err())
}

// A job's feed sends a message for its current value, then one for each change to it.
func TestJobFeed(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/ro/api/jobs/"+f.waiting+"/feed", nil)
	require.NoError(t, err)
	req.SetBasicAuth("ops", "pw")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	assert.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	messages := make(chan string, 16)
	go func() {
		lines := bufio.NewScanner(res.Body)
		for lines.Scan() {
			if data, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				messages <- data
			}
		}
		close(messages)
	}()
	next := func(what string) {
		t.Helper()
		select {
		case m, ok := <-messages:
			require.True(t, ok, "the feed ended before %s", what)
			assert.Equal(t, "changed", m)
		case <-ctx.Done():
			t.Fatalf("no message for %s", what)
		}
	}
	next("the job's current value")
	got, err := f.q.GetJob(ctx, f.waiting)
	require.NoError(t, err)
	require.NoError(t, got[0].AddLog(ctx, nil, "a note from the test", "", ""))
	next("the log entry")

	res2, body := f.do(t, request{path: "/ro/api/jobs/not-an-id/feed"})
	assert.Equal(t, http.StatusBadRequest, res2.StatusCode, body)
}

// Every JSON answer of the API is in the one style of the tools (camelCase, RFC 3339 UTC
// times, milliseconds), the same as rjq --json, with something in each side table and a
// completed job with a result.
func TestAPIJSONStyle(t *testing.T) {
	f := newFixture(t)
	ctx := queuetest.Context(t, time.Minute)
	worker, err := queue.New(ctx, &queue.ConnectOptions{Session: f.session, DB: f.db},
		queuetest.Options(queue.Options{Name: testQueue, MasterInterval: -1, Heartbeat: time.Second}))
	require.NoError(t, err)
	t.Cleanup(func() { worker.Stop(context.Background()) })
	require.NoError(t, worker.Process(func(context.Context, *job.Job) (any, error) {
		return map[string]any{"At": time.Now()}, nil
	}))
	added, err := f.q.AddJob(ctx, f.q.CreateJob(map[string]any{"Upper": 1}).SetUniqueKey("style").SetUniqueFor(time.Hour).SetDeadline(time.Now().Add(time.Hour)))
	require.NoError(t, err)
	_, err = f.q.Wait(ctx, added[0].ID)
	require.NoError(t, err)
	require.NoError(t, f.q.Schedule(ctx, "nightly", "0 3 * * *", nil, nil))
	require.NoError(t, f.q.SetLimit(ctx, "mail", queue.Limit{Starts: 10, Per: time.Minute}))
	require.Eventually(t, func() bool {
		ws, err := f.q.Workers(ctx)
		return err == nil && len(ws) == 1
	}, 30*time.Second, 100*time.Millisecond)

	for _, path := range []string{
		"/jobs/api/summary", "/jobs/api/queues", "/jobs/api/jobs", "/jobs/api/jobs?status=completed",
		"/jobs/api/jobs/" + added[0].ID, "/jobs/api/jobs/" + f.waiting, "/jobs/api/side", "/jobs/api/throughput",
	} {
		res, body := f.do(t, request{path: path})
		require.Equal(t, http.StatusOK, res.StatusCode, "%s: %s", path, body)
		queuetest.CheckJSONStyle(t, path, []byte(body))
	}
	_, body := f.do(t, request{path: "/jobs/api/side"})
	assert.Contains(t, body, `"queueId":"`+worker.ID()+`"`)
	assert.Contains(t, body, `"perMs":60000`)
	assert.Contains(t, body, `"triggers":[]`, "the queue's triggers (none)")
	_, body = f.do(t, request{path: "/jobs/api/jobs/" + added[0].ID})
	assert.Contains(t, body, `"result":{"At":"`)
}
