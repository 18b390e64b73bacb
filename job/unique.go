package job

import (
	"fmt"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/rjqgo/rethinkdb-job-queue/internal/errtext"
)

// uniqueSpace is the UUID namespace of job ids made from unique keys: the id of a key is
// the same in every process and language (UUID v5 of the key in this namespace).
var uniqueSpace = uuid.MustParse("3f3c2ad4-8d1e-5c52-9a3f-6b0f1c1a7e21")

// ErrInvalidUniqueKey is wrapped by the error of SetUniqueKey given an empty key or one
// that is not UTF-8.
var ErrInvalidUniqueKey = fmt.Errorf("%w unique key: want a non-empty UTF-8 string", ErrInvalid)

// SetUniqueKey makes the job unique by key within its queue: at most one job per key is
// waiting, active or failed at a time. The job's id becomes the UUID v5 of the key, so the
// database's primary key enforces it even when many processes add the same key at once,
// and Queue.AddJob returns the job already there in place of a duplicate. A finished job
// (completed, cancelled, terminated) of the key is replaced by the new one. A name left
// as the old id follows the new id. Call it before AddJob.
//
// The key is also stored in the extra field "rjqUniqueKey". The Node.js library ignores
// it and processes the job as any other; a Node producer that adds a job with the same
// key gets a new id and so a second job.
func (j *Job) SetUniqueKey(key string) *Job {
	if key == "" || !utf8.ValidString(key) {
		return j.fail(fmt.Errorf("%w (got %s)", ErrInvalidUniqueKey, errtext.Key(key)))
	}
	id := UniqueID(key)
	if j.Name == j.ID {
		j.Name = id
	}
	j.ID = id
	j.setField(fieldUniqueKey, key)
	return j
}

// UniqueKey returns the key given to SetUniqueKey, or "" for a job without one.
func (j *Job) UniqueKey() string {
	k, _ := j.Fields[fieldUniqueKey].(string)
	return k
}

// UniqueID is the id of the jobs whose unique key is key (see SetUniqueKey); GetJob with
// it finds the job of a key.
func UniqueID(key string) string {
	return uuid.NewSHA1(uniqueSpace, []byte(key)).String()
}
