package job

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrInvalidData is wrapped by the error of a payload, result, log datum or extra field
// that cannot be stored as it is; it wraps ErrInvalid.
var ErrInvalidData = fmt.Errorf("%w data", ErrInvalid)

// maxSafeInt is the largest integer a RethinkDB number (a float64) holds exactly: larger
// ones would read back as other numbers, so counts and payload integers are bounded by it.
const maxSafeInt = 1<<53 - 1

// The times a job can carry: the driver encodes a time through its UnixNano, which holds
// these years only (a later one would be stored as another date).
var (
	minTime = time.Unix(0, math.MinInt64).UTC().Add(time.Second)
	maxTime = time.Unix(0, math.MaxInt64).UTC().Add(-time.Second)
)

// maxDepth bounds how deeply a value may nest; deeper is taken for a cycle.
const maxDepth = 100

// CheckValue reports why v cannot be stored in a job document as it is, or nil when it
// can: a func, chan, complex number or unsafe pointer, a NaN or infinite float, an
// integer beyond ±maxSafeInt, a string that is not valid UTF-8, a time outside the years
// the driver can encode, a query term, or a value nested more than 100 deep (a cycle).
// Types with a MarshalRQL method encode themselves and are taken as they are. The error
// wraps ErrInvalidData and names where in v the problem is.
func CheckValue(v any) error {
	c := checker{seen: make(map[uintptr]bool)}
	if err := c.check(reflect.ValueOf(v), "", 0); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidData, err)
	}
	return nil
}

type checker struct {
	seen map[uintptr]bool
}

var timeType = reflect.TypeFor[time.Time]()

func (c *checker) check(v reflect.Value, path string, depth int) error {
	if !v.IsValid() {
		return nil
	}
	if depth > maxDepth {
		return at(path, "nested more than %d deep (a cycle?)", maxDepth)
	}
	t := v.Type()
	if strings.HasPrefix(t.PkgPath(), "gopkg.in/rethinkdb/rethinkdb-go") {
		return at(path, "a %s is a query term, not data", t)
	}
	if _, ok := t.MethodByName("MarshalRQL"); ok {
		return nil
	}
	if t == timeType {
		tm := v.Interface().(time.Time)
		if tm.Before(minTime) || tm.After(maxTime) {
			return at(path, "time %s is outside the years %d to %d that can be stored", tm.Format(time.RFC3339), minTime.Year(), maxTime.Year())
		}
		return nil
	}
	switch v.Kind() {
	case reflect.Interface:
		return c.check(v.Elem(), path, depth+1)
	case reflect.Pointer:
		return c.checkPointer(v, path, depth)
	case reflect.Slice, reflect.Array:
		return c.checkList(v, path, depth)
	case reflect.Map:
		return c.checkMap(v, path, depth)
	case reflect.Struct:
		return c.checkStruct(v, path, depth)
	}
	return checkScalar(v, path)
}

// at is the error of the value at path.
func at(path, format string, args ...any) error {
	if path == "" {
		path = "the value"
	}
	return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...))
}

// checkScalar checks a value that holds no other value.
func checkScalar(v reflect.Value, path string) error {
	switch v.Kind() {
	case reflect.Bool:
		return nil
	case reflect.String:
		if !utf8.ValidString(v.String()) {
			return at(path, "string %q is not valid UTF-8", v.String())
		}
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n := v.Int(); n > maxSafeInt || n < -maxSafeInt {
			return at(path, "integer %d is beyond ±2^53, which a stored number cannot hold exactly", n)
		}
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if n := v.Uint(); n > maxSafeInt {
			return at(path, "integer %d is beyond 2^53, which a stored number cannot hold exactly", n)
		}
		return nil
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return at(path, "%v cannot be stored (JSON has no NaN or infinity)", f)
		}
		return nil
	}
	return at(path, "a %s cannot be stored", v.Type())
}

func (c *checker) checkPointer(v reflect.Value, path string, depth int) error {
	if v.IsNil() {
		return nil
	}
	if c.seen[v.Pointer()] {
		return at(path, "a pointer cycle")
	}
	c.seen[v.Pointer()] = true
	defer delete(c.seen, v.Pointer())
	return c.check(v.Elem(), path, depth+1)
}

// checkList checks a slice or an array.
func (c *checker) checkList(v reflect.Value, path string, depth int) error {
	if v.Kind() == reflect.Slice {
		if v.IsNil() || v.Type().Elem().Kind() == reflect.Uint8 {
			return nil // nil, or []byte: stored as binary
		}
		if c.seen[v.Pointer()] && v.Len() > 0 {
			return at(path, "a slice that contains itself")
		}
		if v.Len() > 0 {
			c.seen[v.Pointer()] = true
			defer delete(c.seen, v.Pointer())
		}
	}
	for i := range v.Len() {
		if err := c.check(v.Index(i), fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) checkMap(v reflect.Value, path string, depth int) error {
	if v.IsNil() {
		return nil
	}
	if c.seen[v.Pointer()] {
		return at(path, "a map that contains itself")
	}
	c.seen[v.Pointer()] = true
	defer delete(c.seen, v.Pointer())
	switch v.Type().Key().Kind() {
	case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Bool, reflect.Float32, reflect.Float64:
	default:
		return at(path, "map keys of type %s cannot be stored", v.Type().Key())
	}
	iter := v.MapRange()
	for iter.Next() {
		key := fmt.Sprint(iter.Key().Interface())
		if !utf8.ValidString(key) {
			return at(path, "map key %q is not valid UTF-8", key)
		}
		if err := c.check(iter.Value(), path+"."+key, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (c *checker) checkStruct(v reflect.Value, path string, depth int) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || skippedField(f) {
			continue
		}
		if err := c.check(v.Field(i), path+"."+f.Name, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// skippedField reports a struct field the driver leaves out: tagged "-" by its first tag
// among rethinkdb, gorethink and json.
func skippedField(f reflect.StructField) bool {
	for _, key := range []string{"rethinkdb", "gorethink", "json"} {
		if tag, ok := f.Tag.Lookup(key); ok {
			return tag == "-"
		}
	}
	return false
}
