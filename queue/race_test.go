//go:build race

package queue_test

// raceDetector is true under -race.
const raceDetector = true
