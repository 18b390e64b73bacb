package job

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeStore is a Store that records its calls.
type fakeStore struct {
	err error // returned by every call

	mu    sync.Mutex
	calls []storeCall
}

type storeCall struct {
	method  string
	job     *Job
	data    any
	message string
	typ     LogType
	status  Status
	percent float64
}

func (s *fakeStore) record(c storeCall) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	return s.err
}

func (s *fakeStore) SaveJob(_ context.Context, j *Job) error {
	return s.record(storeCall{method: "SaveJob", job: j})
}

func (s *fakeStore) SaveLog(_ context.Context, j *Job, data any, message string, typ LogType, status Status) error {
	return s.record(storeCall{method: "SaveLog", job: j, data: data, message: message, typ: typ, status: status})
}

func (s *fakeStore) SaveProgress(_ context.Context, j *Job, percent float64) error {
	return s.record(storeCall{method: "SaveProgress", job: j, percent: percent})
}

func (s *fakeStore) Calls() []storeCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]storeCall(nil), s.calls...)
}

var _ Store = (*fakeStore)(nil)

// attached returns a new job saved through s.
func attached(s *fakeStore, data any) *Job {
	j := New(data, DefaultOptions())
	j.Attach(s)
	return j
}

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
				j := New(nil, DefaultOptions())
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
			s := &fakeStore{}
			j := attached(s, nil)
			require.Equal(t, Created, j.Status)
			err := sc.call(t.Context(), j)
			assert.ErrorIs(t, err, ErrNotAdded)
			assert.Empty(t, s.Calls())
		})
	}
}

func TestAttach(t *testing.T) {
	j := New(nil, DefaultOptions())
	j.Status = Waiting
	require.ErrorIs(t, j.AddLog(t.Context(), nil, "", "", ""), ErrDetached)

	s := &fakeStore{}
	j.Attach(s)
	require.NoError(t, j.AddLog(t.Context(), nil, "", "", ""))
	assert.Len(t, s.Calls(), 1)

	j.Attach(nil)
	assert.ErrorIs(t, j.AddLog(t.Context(), nil, "", "", ""), ErrDetached)
}

func TestUpdateProgressNotActive(t *testing.T) {
	for _, status := range []Status{Waiting, Completed, Cancelled, Failed, Terminated} {
		t.Run(string(status), func(t *testing.T) {
			s := &fakeStore{}
			j := attached(s, nil)
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
		s := &fakeStore{}
		j := attached(s, nil)
		j.Status = Active
		require.NoError(t, j.UpdateProgress(t.Context(), tt.in))
		calls := s.Calls()
		require.Len(t, calls, 1)
		assert.Equal(t, "SaveProgress", calls[0].method)
		assert.Same(t, j, calls[0].job)
		assert.Equal(t, tt.want, calls[0].percent, "UpdateProgress(%v)", tt.in)
	}
}

func TestSaveStoreErrorReturned(t *testing.T) {
	boom := errors.New("boom")
	for _, sc := range saveCalls {
		t.Run(sc.name, func(t *testing.T) {
			s := &fakeStore{err: boom}
			j := attached(s, nil)
			j.Status = Active
			assert.ErrorIs(t, sc.call(t.Context(), j), boom)
		})
	}
}

func TestAddLogDefaults(t *testing.T) {
	// The store fills in the other defaults (see rdb.NewLog); the job gives nil data as
	// an empty object, as the original does.
	s := &fakeStore{}
	j := attached(s, nil)
	j.Status = Active
	require.NoError(t, j.AddLog(t.Context(), nil, "", "", ""))
	calls := s.Calls()
	require.Len(t, calls, 1)
	c := calls[0]
	assert.Equal(t, "SaveLog", c.method)
	assert.Same(t, j, c.job)
	assert.Equal(t, map[string]any{}, c.data)
	assert.Empty(t, c.message)
	assert.Empty(t, c.typ)
	assert.Empty(t, c.status)
}

func TestAddLogValues(t *testing.T) {
	s := &fakeStore{}
	j := attached(s, nil)
	j.Status = Waiting
	data := map[string]any{"k": "v"}
	require.NoError(t, j.AddLog(t.Context(), data, "hello", Warning, Failed))
	c := s.Calls()[0]
	assert.Equal(t, data, c.data)
	assert.Equal(t, "hello", c.message)
	assert.Equal(t, Warning, c.typ)
	assert.Equal(t, Failed, c.status)

	// a non-nil zero-ish payload is kept as given
	require.NoError(t, j.AddLog(t.Context(), "", "", "", ""))
	assert.Equal(t, "", s.Calls()[1].data)
}

func TestUpdate(t *testing.T) {
	s := &fakeStore{}
	j := attached(s, "x")
	j.Status = Waiting
	require.NoError(t, j.Update(t.Context()))
	calls := s.Calls()
	require.Len(t, calls, 1)
	assert.Equal(t, "SaveJob", calls[0].method)
	assert.Same(t, j, calls[0].job)
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
			s := &fakeStore{}
			j := attached(s, nil)
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
