package queue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

func TestResolveDefaults(t *testing.T) {
	c, _, err := resolve(nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "localhost", c.Host)
	assert.Equal(t, 28015, c.Port)
	assert.Equal(t, "rjqJobQueue", c.DB)
	assert.Equal(t, "rjqJobList", c.Name)
	assert.Equal(t, time.Second, c.InitDelay)
	assert.Equal(t, r.RunOpts{ReadMode: "majority"}, c.RunOpts)
	assert.True(t, c.ChangeFeed)
	assert.Equal(t, 1, c.Concurrency)
	assert.Equal(t, 310*time.Second, c.MasterInterval)
	assert.True(t, c.Master())
	assert.Equal(t, 1000, c.LimitJobLogs)
	assert.Equal(t, 180*24*time.Hour, c.RemoveFinished)
	assert.False(t, c.RemovesImmediately())
	assert.Equal(t, job.DefaultOptions(), c.JobOptions)
	assert.NotNil(t, c.Logger)
	assert.Equal(t, "localhost:28015", c.Addr())
}

func TestResolveGivenValues(t *testing.T) {
	jobOpts := job.Options{Priority: job.High}
	runOpts := r.RunOpts{ReadMode: "single"}
	c, _, err := resolve(
		&ConnectOptions{Host: "db1", Port: 29015, DB: "jobs", Username: "u", Password: "p"},
		&Options{
			Name: "mail", DatabaseInitDelay: -1, QueryRunOptions: &runOpts, NoChangeFeed: true,
			Concurrency: 8, MasterInterval: -1, LimitJobLogs: -1,
			RemoveFinishedJobs: RemoveFinishedJobsImmediately, JobOptions: &jobOpts,
		})
	require.NoError(t, err)
	assert.Equal(t, "db1:29015", c.Addr())
	assert.Equal(t, "jobs", c.DB)
	assert.Equal(t, "u", c.Username)
	assert.Equal(t, "mail", c.Name)
	assert.Equal(t, time.Duration(-1), c.InitDelay)
	assert.Equal(t, "single", c.RunOpts.ReadMode)
	assert.False(t, c.ChangeFeed)
	assert.Equal(t, 8, c.Concurrency)
	assert.False(t, c.Master())
	assert.Equal(t, -1, c.LimitJobLogs)
	assert.True(t, c.RemovesImmediately())
	want := job.DefaultOptions()
	want.Priority = job.High
	assert.Equal(t, want, c.JobOptions, "zero job options are the defaults")
}

func TestResolveAddress(t *testing.T) {
	c, _, err := resolve(&ConnectOptions{Address: "db1:29015"}, nil)
	require.NoError(t, err)
	assert.Equal(t, "db1:29015", c.Addr())
	c, _, err = resolve(&ConnectOptions{Address: "db1"}, nil)
	require.NoError(t, err)
	assert.Equal(t, "db1:28015", c.Addr(), "the default port")
	for _, bad := range []*ConnectOptions{
		{Address: "db1:29015", Host: "db2"},
		{Address: "db1:29015", Port: 1},
		{Address: "db1:x"},
	} {
		_, _, err := resolve(bad, nil)
		assert.ErrorIs(t, err, ErrInvalidOption, "%+v", bad)
	}
}

func TestResolveRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		cxn  *ConnectOptions
		opts *Options
	}{
		"table name":   {nil, &Options{Name: "a b"}},
		"db name":      {&ConnectOptions{DB: "a.b"}, nil},
		"port":         {&ConnectOptions{Port: -1}, nil},
		"concurrency":  {nil, &Options{Concurrency: -2}},
		"job options":  {nil, &Options{JobOptions: &job.Options{Priority: job.Normal, RetryMax: -2}}},
		"address":      {&ConnectOptions{Addresses: []string{"db1:28015", "db2"}}, nil},
		"address port": {&ConnectOptions{Addresses: []string{"db1:99999"}}, nil},
	} {
		_, _, err := resolve(tc.cxn, tc.opts)
		assert.ErrorIs(t, err, ErrInvalidOption, name)
		assert.ErrorIs(t, err, job.ErrInvalid, name)
	}
}

func TestResolveAddresses(t *testing.T) {
	c, _, err := resolve(&ConnectOptions{Addresses: []string{"db1:28016", "db2:28017"}}, nil)
	require.NoError(t, err)
	assert.Equal(t, "db1", c.Host, "Host reports the first address")
	assert.Equal(t, 28016, c.Port)
	assert.Equal(t, "db1:28016,db2:28017", c.Addr())
	c, _, err = resolve(&ConnectOptions{Host: "lb", Port: 1, Addresses: []string{"db1:28016"}}, nil)
	require.NoError(t, err)
	assert.Equal(t, "lb", c.Host, "a given Host is kept for reporting")
}
