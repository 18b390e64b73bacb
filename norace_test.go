//go:build !race

package rjq_test

// raceDetector is true under -race.
const raceDetector = false
