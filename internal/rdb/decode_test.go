package rdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// attachedJob returns j attached to a store that decodes with Decode, as a queue's does.
func attachedJob(j *job.Job) *job.Job {
	j.Attach(&progressStore{id: docTestQueueID})
	return j
}

// queueJob is a new job with data as a queue hands it out: attached, decoding by the
// driver's rules.
func queueJob(data any) *job.Job {
	return attachedJob(job.New(data, job.DefaultOptions()))
}

func TestDataAsGoStruct(t *testing.T) {
	type in struct {
		To      string    `json:"to"`
		Count   int       `json:"count"`
		When    time.Time `json:"when"`
		Tags    []string  `json:"tags"`
		Private string    `json:"-"`
	}
	type out struct {
		To    string    `json:"to"`
		Count int64     `json:"count"`
		When  time.Time `json:"when"`
		Tags  []string  `json:"tags"`
	}
	when := time.Date(2024, 2, 29, 12, 0, 1, 250000000, time.UTC)
	j := queueJob(in{To: "a@b.c", Count: 3, When: when, Tags: []string{"x", "y"}, Private: "p"})
	var got out
	require.NoError(t, j.DataAs(&got))
	assert.Equal(t, "a@b.c", got.To)
	assert.Equal(t, int64(3), got.Count)
	assert.True(t, when.Equal(got.When), "time lost: got %v", got.When)
	assert.Equal(t, []string{"x", "y"}, got.Tags)

	// rethinkdb tag takes precedence over json
	type tagged struct {
		Address string `rethinkdb:"to" json:"address"`
	}
	var tg tagged
	require.NoError(t, j.DataAs(&tg))
	assert.Equal(t, "a@b.c", tg.Address)

	// a pointer to a struct field
	type ptrOut struct {
		When *time.Time `json:"when"`
	}
	var po ptrOut
	require.NoError(t, j.DataAs(&po))
	require.NotNil(t, po.When)
	assert.True(t, when.Equal(*po.When))
}

func TestDataAsFromDB(t *testing.T) {
	// As rethinkdb-go returns a payload: float64 numbers, nested maps, slices, and times
	// in a "+00:00" fixed zone.
	zone := time.FixedZone("+00:00", 0)
	when := time.Date(2025, 7, 1, 9, 30, 0, 123000000, zone)
	j := attachedJob(&job.Job{ID: "5127d082-fe7e-4e88-b1de-7093029695c3", Data: map[string]any{
		"name":  "report",
		"count": float64(12),
		"ratio": 0.25,
		"when":  when,
		"owner": map[string]any{"id": float64(7), "email": "o@x.y", "since": when},
		"items": []any{map[string]any{"n": float64(1)}, map[string]any{"n": float64(2)}},
		"bytes": []byte("hi"),
		"extra": "ignored",
	}})
	type owner struct {
		ID    int       `json:"id"`
		Email string    `json:"email"`
		Since time.Time `json:"since"`
	}
	type item struct {
		N int `json:"n"`
	}
	type payload struct {
		Name  string    `json:"name"`
		Count int       `json:"count"`
		Ratio float64   `json:"ratio"`
		When  time.Time `json:"when"`
		Owner owner     `json:"owner"`
		Items []item    `json:"items"`
		Bytes []byte    `json:"bytes"`
	}
	var p payload
	require.NoError(t, j.DataAs(&p))
	assert.Equal(t, "report", p.Name)
	assert.Equal(t, 12, p.Count)
	assert.Equal(t, 0.25, p.Ratio)
	assert.True(t, when.Equal(p.When), "time lost: got %v", p.When)
	assert.Equal(t, 7, p.Owner.ID)
	assert.Equal(t, "o@x.y", p.Owner.Email)
	assert.True(t, when.Equal(p.Owner.Since), "nested time lost: got %v", p.Owner.Since)
	assert.Equal(t, []item{{1}, {2}}, p.Items)
	assert.Equal(t, []byte("hi"), p.Bytes)

	// into a map: times stay times, not pseudo-type objects
	var m map[string]any
	require.NoError(t, j.DataAs(&m))
	tm, ok := m["when"].(time.Time)
	require.True(t, ok, "when decoded as %T", m["when"])
	assert.True(t, when.Equal(tm))

	// DataAs does not modify the job's payload
	assert.Equal(t, when, j.Data.(map[string]any)["when"])
	assert.Equal(t, float64(12), j.Data.(map[string]any)["count"])
}

func TestDataAsScalarsAndNil(t *testing.T) {
	j := queueJob("text")
	var s string
	require.NoError(t, j.DataAs(&s))
	assert.Equal(t, "text", s)

	j = queueJob(float64(3))
	var n int
	require.NoError(t, j.DataAs(&n))
	assert.Equal(t, 3, n)

	j = queueJob([]any{"a", "b"})
	var sl []string
	require.NoError(t, j.DataAs(&sl))
	assert.Equal(t, []string{"a", "b"}, sl)

	j = queueJob(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	var tm time.Time
	require.NoError(t, j.DataAs(&tm))
	assert.True(t, tm.Equal(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)))
}

func TestDataAsErrors(t *testing.T) {
	type payload struct {
		N int `json:"n"`
	}
	j := queueJob(map[string]any{"n": float64(1)})

	var p payload
	err := j.DataAs(p) // not a pointer
	require.Error(t, err)
	assert.Contains(t, err.Error(), j.ID)

	var nilPtr *payload
	assert.Error(t, j.DataAs(nilPtr))

	assert.Error(t, j.DataAs(nil))

	var n int
	assert.Error(t, j.DataAs(&n), "a map does not decode into an int")
}

func TestReadJobsDecodeByTheDriversRules(t *testing.T) {
	// A job read with a store decodes through it: the rethinkdb tag wins over json.
	doc := fromDB(sampleJob().Document()).(map[string]any)
	doc["data"] = map[string]any{"to": "a@b.c"}
	j, err := FromDocument(&progressStore{id: docTestQueueID}, doc)
	require.NoError(t, err)
	type tagged struct {
		Address string `rethinkdb:"to" json:"address"`
	}
	var tg tagged
	require.NoError(t, j.DataAs(&tg))
	assert.Equal(t, "a@b.c", tg.Address)
}
