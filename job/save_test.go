package job

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeStore is a Store that records its calls.
type fakeStore struct {
	id  string
	err error // returned by every call

	mu    sync.Mutex
	calls []storeCall
}

type storeCall struct {
	method  string
	job     *Job
	entry   LogEntry
	percent float64
}

func (s *fakeStore) QueueID() string { return s.id }

func (s *fakeStore) record(c storeCall) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	return s.err
}

func (s *fakeStore) UpdateJob(_ context.Context, j *Job, e LogEntry) error {
	return s.record(storeCall{method: "UpdateJob", job: j, entry: e})
}

func (s *fakeStore) AddLog(_ context.Context, j *Job, e LogEntry) error {
	return s.record(storeCall{method: "AddLog", job: j, entry: e})
}

func (s *fakeStore) UpdateProgress(_ context.Context, j *Job, percent float64) error {
	return s.record(storeCall{method: "UpdateProgress", job: j, percent: percent})
}

func (s *fakeStore) Calls() []storeCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]storeCall(nil), s.calls...)
}

var _ Store = (*fakeStore)(nil)

const testQueueID = "host:rjqJobQueue:rjqJobList:4242:0d6f0c4f-6f1c-4b8f-9d47-0f2a3d1c2b11"

// saveCall is one of the three save methods, with fixed arguments.
type saveCall struct {
	name string
	call func(context.Context, *Job) error
}

var saveCalls = []saveCall{
	{"Update", func(ctx context.Context, j *Job) error { return j.Update(ctx) }},
	{"AddLog", func(ctx context.Context, j *Job) error { return j.AddLog(ctx, nil, "", "", "") }},
	{"UpdateProgress", func(ctx context.Context, j *Job) error { return j.UpdateProgress(ctx, 50) }},
}

func TestSaveDetached(t *testing.T) {
	for _, sc := range saveCalls {
		for _, status := range []Status{Created, Waiting, Active} {
			t.Run(sc.name+"/"+string(status), func(t *testing.T) {
				j := New(nil, nil, DefaultOptions())
				j.Status = status
				err := sc.call(t.Context(), j)
				assert.ErrorIs(t, err, ErrDetached)
			})
		}
	}
}

func TestSaveNotAdded(t *testing.T) {
	for _, sc := range saveCalls {
		t.Run(sc.name, func(t *testing.T) {
			s := &fakeStore{id: testQueueID}
			j := New(s, nil, DefaultOptions())
			require.Equal(t, Created, j.Status)
			err := sc.call(t.Context(), j)
			assert.ErrorIs(t, err, ErrNotAdded)
			assert.Empty(t, s.Calls())
		})
	}
}

func TestAttach(t *testing.T) {
	j := New(nil, nil, DefaultOptions())
	j.Status = Waiting
	require.ErrorIs(t, j.AddLog(t.Context(), nil, "", "", ""), ErrDetached)

	s := &fakeStore{id: testQueueID}
	j.Attach(s)
	assert.Equal(t, testQueueID, j.QueueID)
	require.NoError(t, j.AddLog(t.Context(), nil, "", "", ""))
	assert.Len(t, s.Calls(), 1)

	j.Attach(nil)
	assert.ErrorIs(t, j.AddLog(t.Context(), nil, "", "", ""), ErrDetached)
}

func TestUpdateProgressNotActive(t *testing.T) {
	for _, status := range []Status{Waiting, Completed, Cancelled, Failed, Terminated} {
		t.Run(string(status), func(t *testing.T) {
			s := &fakeStore{id: testQueueID}
			j := New(s, nil, DefaultOptions())
			j.Status = status
			err := j.UpdateProgress(t.Context(), 10)
			assert.ErrorIs(t, err, ErrNotActive)
			assert.Empty(t, s.Calls(), "the store must not be called")
		})
	}
}

func TestUpdateProgressActive(t *testing.T) {
	tests := []struct {
		in, want float64
	}{
		{42.5, 42.5},
		{-5, 0},
		{150, 100},
		{math.NaN(), 0},
		{0, 0},
		{100, 100},
	}
	for _, tt := range tests {
		s := &fakeStore{id: testQueueID}
		j := New(s, nil, DefaultOptions())
		j.Status = Active
		require.NoError(t, j.UpdateProgress(t.Context(), tt.in))
		calls := s.Calls()
		require.Len(t, calls, 1)
		assert.Equal(t, "UpdateProgress", calls[0].method)
		assert.Same(t, j, calls[0].job)
		assert.Equal(t, tt.want, calls[0].percent, "UpdateProgress(%v)", tt.in)
	}
}

func TestSaveStoreErrorReturned(t *testing.T) {
	boom := errors.New("boom")
	for _, sc := range saveCalls {
		t.Run(sc.name, func(t *testing.T) {
			s := &fakeStore{id: testQueueID, err: boom}
			j := New(s, nil, DefaultOptions())
			j.Status = Active
			assert.ErrorIs(t, sc.call(t.Context(), j), boom)
		})
	}
}

func TestAddLogDefaults(t *testing.T) {
	s := &fakeStore{id: testQueueID}
	j := New(s, nil, DefaultOptions())
	j.Status = Active
	j.RetryCount = 2
	j.ProcessCount = 3
	before := time.Now().Add(-time.Millisecond)
	require.NoError(t, j.AddLog(t.Context(), nil, "", "", ""))
	calls := s.Calls()
	require.Len(t, calls, 1)
	c := calls[0]
	assert.Equal(t, "AddLog", c.method)
	assert.Same(t, j, c.job)
	e := c.entry
	assert.Equal(t, map[string]any{}, e.Data)
	assert.Equal(t, MessageSeeLogData, e.Message)
	assert.Equal(t, "See the data attached to this log entry", e.Message)
	assert.Equal(t, Information, e.Type)
	assert.Equal(t, Active, e.Status)
	assert.Equal(t, testQueueID, e.QueueID)
	assert.Equal(t, 2, e.RetryCount)
	assert.Equal(t, 3, e.ProcessCount)
	assertMillisUTC(t, e.Date)
	assert.False(t, e.Date.Before(before.Truncate(time.Millisecond)))

	doc := e.Document()
	assert.Equal(t, map[string]any{}, doc["data"])
	for _, k := range []string{"duration", "errorMessage", "errorStack"} {
		assert.NotContains(t, doc, k)
	}
}

func TestAddLogValues(t *testing.T) {
	s := &fakeStore{id: testQueueID}
	j := New(s, nil, DefaultOptions())
	j.Status = Waiting
	data := map[string]any{"k": "v"}
	require.NoError(t, j.AddLog(t.Context(), data, "hello", Warning, Failed))
	e := s.Calls()[0].entry
	assert.Equal(t, data, e.Data)
	assert.Equal(t, "hello", e.Message)
	assert.Equal(t, Warning, e.Type)
	assert.Equal(t, Failed, e.Status)
	assert.Equal(t, testQueueID, e.QueueID)

	// a non-nil zero-ish payload is kept as given
	require.NoError(t, j.AddLog(t.Context(), "", "", "", ""))
	assert.Equal(t, "", s.Calls()[1].entry.Data)
}

func TestUpdate(t *testing.T) {
	s := &fakeStore{id: testQueueID}
	j := New(s, "x", DefaultOptions())
	j.Status = Waiting
	require.NoError(t, j.Update(t.Context()))
	calls := s.Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, "UpdateJob", calls[0].method)
	assert.Same(t, j, calls[0].job)
	e := calls[0].entry
	assert.Equal(t, MessageUpdated, e.Message)
	assert.Equal(t, "Job updated. Old values in log data", e.Message)
	assert.Equal(t, Information, e.Type)
	assert.Equal(t, Waiting, e.Status)
	assert.Equal(t, testQueueID, e.QueueID)
	assertMillisUTC(t, e.Date)
}

func TestUpdateInvalidNotSaved(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Job)
		want   error
	}{
		{"setter error", func(j *Job) { j.SetPriority(7) }, ErrInvalidPriority},
		{"field set directly", func(j *Job) { j.Timeout = -1 }, ErrInvalidTimeout},
		{"reserved Fields key", func(j *Job) { j.Fields = map[string]any{"status": "x"} }, ErrInvalidField},
		{"bad status", func(j *Job) { j.Status = "bogus" }, ErrInvalidField},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &fakeStore{id: testQueueID}
			j := New(s, nil, DefaultOptions())
			j.Status = Waiting
			tt.modify(j)
			err := j.Update(t.Context())
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.want)
			assert.ErrorIs(t, err, ErrInvalid)
			assert.Empty(t, s.Calls(), "nothing may be written")
		})
	}
}
