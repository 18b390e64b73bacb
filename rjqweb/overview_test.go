package rjqweb

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// overviewResponse is what api/queues answers.
type overviewResponse struct {
	Current string `json:"current"`
	Queues  []struct {
		Name    string         `json:"name"`
		Href    string         `json:"href"`
		Counts  map[string]int `json:"counts"`
		Paused  bool           `json:"paused"`
		Workers int            `json:"workers"`
		Oldest  float64        `json:"oldestWaitingSeconds"`
		Error   string         `json:"error"`
	} `json:"queues"`
}

// open opens another queue of the fixture's database, ready, stopped when the test ends.
func (f *fixture) open(ctx context.Context, name string) (*queue.Queue, error) {
	q, err := queue.New(ctx, &queue.ConnectOptions{Session: f.session, DB: f.db},
		queuetest.Options(queue.Options{Name: name, MasterInterval: -1, Heartbeat: -1}))
	if err != nil {
		return nil, err
	}
	f.t.Cleanup(func() { _ = q.Stop(context.Background()) })
	return q, q.Ready(ctx)
}

func TestTheOverviewListsEveryQueueAndLinksToTheirDashboards(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A second queue of the database, paused, with a job waiting since a minute ago and
	// a limit (so it has side tables, which are not queues).
	mail, err := f.open(ctx, "mail")
	require.NoError(t, err)
	_, err = mail.AddJob(ctx, mail.CreateJob("hello").SetDateEnable(time.Now().Add(-time.Minute)), mail.CreateJob("later").SetDateEnable(time.Now().Add(time.Hour)))
	require.NoError(t, err)
	require.NoError(t, mail.SetLimit(ctx, "x", queue.Limit{Starts: 1, Per: time.Second}))
	require.NoError(t, mail.Pause(ctx, true))

	var opened []string
	var mu sync.Mutex
	open := func(ctx context.Context, name string) (*queue.Queue, error) {
		mu.Lock()
		opened = append(opened, name)
		mu.Unlock()
		return f.open(ctx, name)
	}
	h, err := New(Options{Queue: f.q, Session: f.session, Prefix: "/ops/", Open: open})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) (int, string) {
		res, err := client.Get(srv.URL + path)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(b)
	}

	code, body := get("/ops/api/queues")
	require.Equal(t, http.StatusOK, code, body)
	var o overviewResponse
	require.NoError(t, json.Unmarshal([]byte(body), &o))
	assert.Equal(t, testQueue, o.Current)
	require.Len(t, o.Queues, 2, "the two queues, and none of their side tables: %s", body)
	dash, m := o.Queues[0], o.Queues[1]
	assert.Equal(t, testQueue, dash.Name)
	assert.Equal(t, "./", dash.Href)
	assert.Equal(t, 1, dash.Counts[string(job.Waiting)])
	assert.Equal(t, "mail", m.Name)
	assert.Equal(t, "q/mail/", m.Href)
	assert.Equal(t, 2, m.Counts[string(job.Waiting)])
	assert.True(t, m.Paused)
	assert.InDelta(t, 60, m.Oldest, 30, "the due job has waited about a minute; the delayed one is not due")
	assert.Empty(t, m.Error)

	// Click through: the other queue's dashboard, under q/mail/, whose overview links back.
	code, body = get("/ops/q/mail/api/summary")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"queue":"mail"`)
	code, body = get("/ops/q/mail/api/queues")
	require.Equal(t, http.StatusOK, code, body)
	require.NoError(t, json.Unmarshal([]byte(body), &o))
	assert.Equal(t, "mail", o.Current)
	assert.Equal(t, "../../", o.Queues[0].Href)
	assert.Equal(t, "./", o.Queues[1].Href)
	code, _ = get("/ops/q/mail/")
	assert.Equal(t, http.StatusOK, code)

	// Names that are not queues are never opened: a queue opened on them would create
	// their table.
	for _, name := range []string{"nosuch", "mail_limits", "a-b", "%2E%2E"} {
		code, body := get("/ops/q/" + name + "/api/summary")
		assert.Contains(t, []int{http.StatusNotFound, http.StatusBadRequest}, code, "%s: %s", name, body)
	}
	mu.Lock()
	assert.Equal(t, []string{"mail"}, opened, "opened once, and only the queue")
	mu.Unlock()
	res, err := client.Get(srv.URL + "/ops/q/" + testQueue + "/")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusFound, res.StatusCode, "its own queue: back to the root")
	assert.Equal(t, "../../", res.Header.Get("Location"))
}

func TestWithoutOpenTheOverviewLinksOnlyToItsOwnQueue(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := f.open(ctx, "other")
	require.NoError(t, err)

	_, body := f.do(t, request{path: "/ro/api/queues"})
	var o overviewResponse
	require.NoError(t, json.Unmarshal([]byte(body), &o))
	require.Len(t, o.Queues, 2, body)
	assert.Equal(t, "./", o.Queues[0].Href)
	assert.Equal(t, "other", o.Queues[1].Name)
	assert.Empty(t, o.Queues[1].Href)
	res, _ := f.do(t, request{path: "/ro/q/other/api/summary"})
	assert.Equal(t, http.StatusNotFound, res.StatusCode)
}
