package payload

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxSafeInt is the largest integer a stored number (a float64) holds exactly.
const MaxSafeInt = 1<<53 - 1

// The times a document can hold: the driver encodes a time through its UnixNano, which
// holds these years only (a later one would be stored as another date).
var (
	MinTime = time.Unix(0, math.MinInt64).UTC().Add(time.Second)
	MaxTime = time.Unix(0, math.MaxInt64).UTC().Add(-time.Second)
)

// maxDepth bounds how deeply a value may nest; deeper is taken for a cycle.
const maxDepth = 100

var (
	timeType      = reflect.TypeFor[time.Time]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
	textType      = reflect.TypeFor[encoding.TextMarshaler]()
	rqlType       = reflect.TypeFor[rqlMarshaler]()
)

// rqlMarshaler is rethinkdb-go's Marshaler: a type that encodes itself for the driver.
type rqlMarshaler interface {
	MarshalRQL() (any, error)
}

// Encode returns v as it is stored (see the package documentation), or an error naming
// where in v a value cannot be stored and why. The tree shares nothing with v: changing
// either later does not change the other, but for []byte values, which it copies too.
func Encode(v any) (any, error) {
	e := encoder{seen: map[uintptr]bool{}}
	return e.encode(reflect.ValueOf(v), "", 0)
}

type encoder struct {
	seen map[uintptr]bool
}

// Error is a value that cannot be stored: where it is (a path such as ".items[2].when",
// empty for the value itself) and why.
type Error struct {
	Path   string
	Reason string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return strings.TrimPrefix(e.Path, ".") + ": " + e.Reason
}

func fail(path, format string, args ...any) error {
	return &Error{Path: path, Reason: fmt.Sprintf(format, args...)}
}

// encode returns v as it is stored, at path in the whole value, depth levels down.
func (e *encoder) encode(v reflect.Value, path string, depth int) (any, error) {
	if !v.IsValid() {
		return nil, nil
	}
	if depth > maxDepth {
		return nil, fail(path, "nested more than %d deep (a cycle?)", maxDepth)
	}
	t := v.Type()
	if strings.HasPrefix(t.PkgPath(), "gopkg.in/rethinkdb/rethinkdb-go") {
		return nil, fail(path, "a %s is a query term, not data", t)
	}
	if t == timeType {
		return encodeTime(v.Interface().(time.Time), path)
	}
	if t.Kind() == reflect.Pointer && v.IsNil() {
		return nil, nil
	}
	if t.Kind() == reflect.Pointer && t.Elem() == timeType {
		return encodeTime(v.Elem().Interface().(time.Time), path)
	}
	if out, done, err := e.selfEncoded(v, path, depth); done {
		return out, err
	}
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return nil, nil
		}
		return e.encode(v.Elem(), path, depth+1)
	case reflect.Pointer:
		return e.pointer(v, path, depth)
	case reflect.Slice:
		return e.slice(v, path, depth)
	case reflect.Array:
		return e.list(v, path, depth)
	case reflect.Map:
		return e.object(v, path, depth)
	case reflect.Struct:
		return e.structure(v, path, depth)
	}
	return scalar(v, path)
}

// selfEncoded encodes a value whose type encodes itself (MarshalRQL, MarshalJSON or
// MarshalText, on the value or, when addressable, on its pointer), in that order; done
// is false for any other value.
func (e *encoder) selfEncoded(v reflect.Value, path string, depth int) (out any, done bool, err error) {
	t := v.Type()
	if t.Implements(rqlType) && !(t.Kind() == reflect.Interface && v.IsNil()) {
		marshaled, err := v.Interface().(rqlMarshaler).MarshalRQL()
		if err != nil {
			return nil, true, fail(path, "MarshalRQL of %s: %v", t, err)
		}
		out, err := e.encode(reflect.ValueOf(marshaled), path, depth+1)
		return out, true, err
	}
	if t.Implements(marshalerType) && !(t.Kind() == reflect.Interface && v.IsNil()) {
		out, err := e.marshalJSON(v, path)
		return out, true, err
	}
	if v.Kind() != reflect.Pointer && v.CanAddr() && reflect.PointerTo(t).Implements(marshalerType) {
		out, err := e.marshalJSON(v.Addr(), path)
		return out, true, err
	}
	if t.Implements(textType) && t.Kind() != reflect.Interface {
		out, err := marshalText(v, path)
		return out, true, err
	}
	if v.Kind() != reflect.Pointer && v.CanAddr() && reflect.PointerTo(t).Implements(textType) {
		out, err := marshalText(v.Addr(), path)
		return out, true, err
	}
	return nil, false, nil
}

// pointer encodes what a non-nil pointer points to, refusing a pointer met again on the
// way down (a cycle).
func (e *encoder) pointer(v reflect.Value, path string, depth int) (any, error) {
	if e.seen[v.Pointer()] {
		return nil, fail(path, "a pointer cycle")
	}
	e.seen[v.Pointer()] = true
	defer delete(e.seen, v.Pointer())
	return e.encode(v.Elem(), path, depth+1)
}

// slice encodes a slice: nil as null, bytes as a binary (unless the byte type marshals
// itself), else as a list, refusing a slice that contains itself.
func (e *encoder) slice(v reflect.Value, path string, depth int) (any, error) {
	if v.IsNil() {
		return nil, nil
	}
	t := v.Type()
	if t.Elem().Kind() == reflect.Uint8 && !reflect.PointerTo(t.Elem()).Implements(marshalerType) && !reflect.PointerTo(t.Elem()).Implements(textType) {
		return slices.Clone(v.Bytes()), nil // binary
	}
	if v.Len() > 0 {
		if e.seen[v.Pointer()] {
			return nil, fail(path, "a slice that contains itself")
		}
		e.seen[v.Pointer()] = true
		defer delete(e.seen, v.Pointer())
	}
	return e.list(v, path, depth)
}

func encodeTime(tm time.Time, path string) (any, error) {
	if tm.IsZero() {
		return nil, nil
	}
	if tm.Before(MinTime) || tm.After(MaxTime) {
		return nil, fail(path, "time %s is outside the years %d to %d that can be stored", tm.Format(time.RFC3339), MinTime.Year(), MaxTime.Year())
	}
	return tm, nil
}

// scalar encodes a value that holds no other value.
func scalar(v reflect.Value, path string) (any, error) {
	switch v.Kind() {
	case reflect.Bool:
		return v.Bool(), nil
	case reflect.String:
		if !utf8.ValidString(v.String()) {
			return nil, fail(path, "string %q is not valid UTF-8", v.String())
		}
		return v.String(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := v.Int()
		if n > MaxSafeInt || n < -MaxSafeInt {
			return nil, fail(path, "integer %d is beyond ±2^53, which a stored number cannot hold exactly", n)
		}
		return float64(n), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n := v.Uint()
		if n > MaxSafeInt {
			return nil, fail(path, "integer %d is beyond 2^53, which a stored number cannot hold exactly", n)
		}
		return float64(n), nil
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fail(path, "%v cannot be stored (JSON has no NaN or infinity)", f)
		}
		if v.Kind() == reflect.Float32 {
			// As encoding/json writes a float32: its shortest decimal form.
			f, _ = strconv.ParseFloat(strconv.FormatFloat(f, 'g', -1, 32), 64)
		}
		return f, nil
	}
	return nil, fail(path, "a %s cannot be stored", v.Type())
}

func (e *encoder) list(v reflect.Value, path string, depth int) (any, error) {
	out := make([]any, v.Len())
	for i := range v.Len() {
		var err error
		if out[i], err = e.encode(v.Index(i), path+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (e *encoder) object(v reflect.Value, path string, depth int) (any, error) {
	if v.IsNil() {
		return nil, nil
	}
	if e.seen[v.Pointer()] {
		return nil, fail(path, "a map that contains itself")
	}
	e.seen[v.Pointer()] = true
	defer delete(e.seen, v.Pointer())
	out := make(map[string]any, v.Len())
	iter := v.MapRange()
	for iter.Next() {
		key, err := mapKey(iter.Key(), path)
		if err != nil {
			return nil, err
		}
		if out[key], err = e.encode(iter.Value(), path+"."+key, depth+1); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// mapKey is a map key as encoding/json writes it: a string, an integer in decimal, or a
// TextMarshaler's text.
func mapKey(k reflect.Value, path string) (string, error) {
	var key string
	switch {
	case k.Kind() == reflect.String:
		key = k.String()
	case k.Type().Implements(textType):
		if k.Kind() == reflect.Pointer && k.IsNil() {
			return "", nil
		}
		b, err := k.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return "", fail(path, "map key: %v", err)
		}
		key = string(b)
	case k.CanInt():
		key = strconv.FormatInt(k.Int(), 10)
	case k.CanUint():
		key = strconv.FormatUint(k.Uint(), 10)
	default:
		return "", fail(path, "map keys of type %s cannot be stored (want strings, integers or encoding.TextMarshaler)", k.Type())
	}
	if !utf8.ValidString(key) {
		return "", fail(path, "map key %q is not valid UTF-8", key)
	}
	return key, nil
}

func (e *encoder) structure(v reflect.Value, path string, depth int) (any, error) {
	fields := fieldsOf(v.Type())
	out := make(map[string]any, len(fields))
	for _, f := range fields {
		fv, ok := fieldByIndex(v, f.index)
		if !ok {
			continue // inside a nil embedded pointer
		}
		if (f.omitEmpty && isEmpty(fv)) || (f.omitZero && isZero(fv)) {
			continue
		}
		p := path + "." + f.name
		var val any
		var err error
		if f.quoted {
			val, err = e.quoted(fv, p, depth)
		} else {
			val, err = e.encode(fv, p, depth+1)
		}
		if err != nil {
			return nil, err
		}
		out[f.name] = val
	}
	return out, nil
}

// quoted encodes a field with the ,string option: its value as a JSON string.
func (e *encoder) quoted(v reflect.Value, path string, depth int) (any, error) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, nil
		}
		v = v.Elem()
	}
	val, err := e.encode(v, path, depth+1)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(val)
	if err != nil {
		return nil, fail(path, "%v", err)
	}
	return string(b), nil
}

// fieldByIndex is v's field at index, reporting false when it is inside a nil embedded
// pointer.
func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 {
			if v.Kind() == reflect.Pointer {
				if v.IsNil() {
					return reflect.Value{}, false
				}
				v = v.Elem()
			}
		}
		v = v.Field(x)
	}
	return v, true
}

// isEmpty is encoding/json's omitempty test, and the zero time too (stored as null).
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return v.Type() == timeType && v.Interface().(time.Time).IsZero()
}

// isZero is encoding/json's omitzero test: an IsZero method when there is one, else the
// zero value.
func isZero(v reflect.Value) bool {
	if z, ok := v.Interface().(interface{ IsZero() bool }); ok {
		if v.Kind() == reflect.Pointer && v.IsNil() {
			return true
		}
		return z.IsZero()
	}
	return v.IsZero()
}

// marshalJSON encodes a json.Marshaler by what it writes.
func (e *encoder) marshalJSON(v reflect.Value, path string) (any, error) {
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, nil
	}
	b, err := v.Interface().(json.Marshaler).MarshalJSON()
	if err != nil {
		return nil, fail(path, "MarshalJSON of %s: %v", v.Type(), err)
	}
	return fromJSON(b, path)
}

func marshalText(v reflect.Value, path string) (any, error) {
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, nil
	}
	b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
	if err != nil {
		return nil, fail(path, "MarshalText of %s: %v", v.Type(), err)
	}
	if !utf8.Valid(b) {
		return nil, fail(path, "MarshalText of %s gave invalid UTF-8", v.Type())
	}
	return string(b), nil
}

// fromJSON decodes JSON text into the stored tree, refusing numbers a stored number
// cannot hold exactly.
func fromJSON(b []byte, path string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fail(path, "MarshalJSON gave invalid JSON: %v", err)
	}
	return numbers(v, path)
}

// numbers replaces the json.Numbers of a decoded tree by float64s.
func numbers(v any, path string) (any, error) {
	switch v := v.(type) {
	case json.Number:
		return Number(v, path)
	case []any:
		for i, e := range v {
			var err error
			if v[i], err = numbers(e, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return nil, err
			}
		}
	case map[string]any:
		for k, e := range v {
			var err error
			if v[k], err = numbers(e, path+"."+k); err != nil {
				return nil, err
			}
		}
	}
	return v, nil
}

// Number is n as a stored number, or an error when it is an integer beyond ±2^53 or not a
// finite number.
func Number(n json.Number, path string) (float64, error) {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		if i > MaxSafeInt || i < -MaxSafeInt {
			return 0, fail(path, "integer %d is beyond ±2^53, which a stored number cannot hold exactly", i)
		}
		return float64(i), nil
	} else if errors.Is(err, strconv.ErrRange) {
		return 0, fail(path, "integer %s is beyond ±2^53, which a stored number cannot hold exactly", n)
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) {
		return 0, fail(path, "number %s cannot be stored", n)
	}
	return f, nil
}
