package rdb

import "github.com/rjqgo/rethinkdb-job-queue/job"

// LogDocument and WithoutData are the old names of job.LogEntry's Document and
// WithoutData, kept only because claim.go still calls them (it is being changed by other
// work). Delete this file once it calls the methods.

// LogDocument returns e.Document().
func LogDocument(e job.LogEntry) map[string]any { return e.Document() }

// WithoutData returns e.WithoutData().
func WithoutData(e job.LogEntry) job.LogEntry { return e.WithoutData() }
