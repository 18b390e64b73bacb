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
	c, err := resolve(nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "localhost", c.host)
	assert.Equal(t, 28015, c.port)
	assert.Equal(t, "rjqJobQueue", c.db)
	assert.Equal(t, "rjqJobList", c.name)
	assert.Equal(t, time.Second, c.initDelay)
	assert.Equal(t, r.RunOpts{ReadMode: "majority"}, c.runOpts)
	assert.True(t, c.changeFeed)
	assert.Equal(t, 1, c.concurrency)
	assert.Equal(t, 310*time.Second, c.masterInterval)
	assert.True(t, c.master())
	assert.Equal(t, 1000, c.limitJobLogs)
	assert.Equal(t, 180*24*time.Hour, c.removeFinished)
	assert.False(t, c.removeImmediately())
	assert.Equal(t, job.DefaultOptions(), c.jobOptions)
	assert.NotNil(t, c.logger)
	assert.Equal(t, "localhost:28015", c.addr())
}

func TestResolveGivenValues(t *testing.T) {
	jobOpts := job.Options{Priority: job.High}
	runOpts := r.RunOpts{ReadMode: "single"}
	c, err := resolve(
		&ConnectOptions{Host: "db1", Port: 29015, DB: "jobs", Username: "u", Password: "p"},
		&Options{
			Name: "mail", DatabaseInitDelay: -1, QueryRunOptions: &runOpts, NoChangeFeed: true,
			Concurrency: 8, MasterInterval: -1, LimitJobLogs: -1,
			RemoveFinishedJobs: RemoveFinishedJobsImmediately, JobOptions: &jobOpts,
		})
	require.NoError(t, err)
	assert.Equal(t, "db1:29015", c.addr())
	assert.Equal(t, "jobs", c.db)
	assert.Equal(t, "u", c.username)
	assert.Equal(t, "mail", c.name)
	assert.Equal(t, time.Duration(-1), c.initDelay)
	assert.Equal(t, "single", c.runOpts.ReadMode)
	assert.False(t, c.changeFeed)
	assert.Equal(t, 8, c.concurrency)
	assert.False(t, c.master())
	assert.Equal(t, -1, c.limitJobLogs)
	assert.True(t, c.removeImmediately())
	want := jobOpts
	want.Timeout = job.DefaultTimeout
	assert.Equal(t, want, c.jobOptions, "job options are used as given, zero fields included, but a zero timeout is the default")
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
		"job options":  {nil, &Options{JobOptions: &job.Options{Priority: job.Normal, RetryMax: -1}}},
		"address":      {&ConnectOptions{Addresses: []string{"db1:28015", "db2"}}, nil},
		"address port": {&ConnectOptions{Addresses: []string{"db1:99999"}}, nil},
	} {
		_, err := resolve(tc.cxn, tc.opts)
		assert.ErrorIs(t, err, ErrInvalidOption, name)
		assert.ErrorIs(t, err, job.ErrInvalid, name)
	}
}

func TestResolveAddresses(t *testing.T) {
	c, err := resolve(&ConnectOptions{Addresses: []string{"db1:28016", "db2:28017"}}, nil)
	require.NoError(t, err)
	assert.Equal(t, "db1", c.host, "Host reports the first address")
	assert.Equal(t, 28016, c.port)
	assert.Equal(t, "db1:28016,db2:28017", c.addr())
	c, err = resolve(&ConnectOptions{Host: "lb", Port: 1, Addresses: []string{"db1:28016"}}, nil)
	require.NoError(t, err)
	assert.Equal(t, "lb", c.host, "a given Host is kept for reporting")
}
