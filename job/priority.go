package job

import (
	"fmt"
	"strings"
)

// Priority orders jobs for processing: a lower number is processed first. The numbers are
// the ones the Node.js library stores, so Go and Node.js workers agree on the order.
type Priority int

// The six priorities of the original library.
const (
	Highest Priority = 10
	High    Priority = 20
	Medium  Priority = 30
	Normal  Priority = 40
	Low     Priority = 50
	Lowest  Priority = 60
)

var priorityNames = map[Priority]string{
	Highest: "highest",
	High:    "high",
	Medium:  "medium",
	Normal:  "normal",
	Low:     "low",
	Lowest:  "lowest",
}

// String returns the priority's name ("normal", "high", …), or "Priority(n)" for a number
// that is not one of the six.
func (p Priority) String() string {
	if name, ok := priorityNames[p]; ok {
		return name
	}
	return fmt.Sprintf("Priority(%d)", int(p))
}

// Valid reports whether p is one of the six priorities.
func (p Priority) Valid() bool {
	_, ok := priorityNames[p]
	return ok
}

// ParsePriority returns the priority with the given name (case-insensitive), as the Node.js
// library's setPriority accepts it. An unknown name gives an error that wraps
// ErrInvalidPriority.
func ParsePriority(name string) (Priority, error) {
	for p, n := range priorityNames {
		if strings.EqualFold(n, name) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown name %q", ErrInvalidPriority, name)
}
