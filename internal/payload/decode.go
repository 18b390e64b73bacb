package payload

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
)

var (
	unmarshalerType   = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalType = reflect.TypeFor[encoding.TextUnmarshaler]()
	rqlUnmarshalType  = reflect.TypeFor[rqlUnmarshaler]()
)

// rqlUnmarshaler is rethinkdb-go's Unmarshaler: a type that decodes itself from the driver.
type rqlUnmarshaler interface {
	UnmarshalRQL(any) error
}

// Decode decodes a stored value (as the driver reads it, or as Encode returns it) into v,
// a non-nil pointer, by the names Encode writes (see the package documentation). Numbers
// may be float64s, json.Numbers or Go integers; times time.Time or RFC 3339 strings;
// binaries []byte or base64 strings. A stored null leaves a struct field, a map entry or
// a slice element at its zero value (the zero time for a time.Time).
func Decode(stored, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("decode into %T: want a non-nil pointer", v)
	}
	return decode(stored, rv.Elem(), "")
}

// mismatch is the error of a stored value that does not fit the Go type.
func mismatch(path string, stored any, t reflect.Type) error {
	what := fmt.Sprintf("%T", stored)
	switch stored.(type) {
	case map[string]any:
		what = "an object"
	case []any:
		what = "an array"
	case string:
		what = "a string"
	case float64, json.Number, int, int64:
		what = "a number"
	case bool:
		what = "a boolean"
	}
	return fail(path, "cannot decode %s into %s", what, t)
}

// decode decodes stored into v, at path in the whole value.
func decode(stored any, v reflect.Value, path string) error {
	t := v.Type()
	if stored == nil && nullDecoded(v) {
		return nil
	}
	if t == timeType {
		return decodeTime(stored, v, path)
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return decode(stored, v.Elem(), path)
	case reflect.Interface:
		return decodeInterface(stored, v, path)
	}
	if done, err := decodeSelf(stored, v, path); done {
		return err
	}
	switch v.Kind() {
	case reflect.Struct:
		return decodeStruct(stored, v, path)
	case reflect.Map:
		return decodeMap(stored, v, path)
	case reflect.Slice:
		return decodeSlice(stored, v, path)
	case reflect.Array:
		return decodeArray(stored, v, path)
	}
	return decodeScalar(stored, v, path)
}

// nullDecoded gives v a stored null as encoding/json does: a pointer, a time, an
// interface, a map or a slice becomes its zero value, any other value is left as it is.
// It reports false, having done nothing, for a json.Unmarshaler, which is given the null.
func nullDecoded(v reflect.Value) bool {
	t := v.Type()
	switch {
	case v.Kind() == reflect.Pointer, t == timeType:
		v.SetZero()
	case reflect.PointerTo(t).Implements(unmarshalerType):
		return false // a json.RawMessage keeps the null
	case v.Kind() == reflect.Interface, v.Kind() == reflect.Map, v.Kind() == reflect.Slice:
		v.SetZero()
	}
	return true
}

// decodeInterface decodes into an interface: an empty one gets a copy of the stored
// tree; one with methods only decodes into the pointer it already holds.
func decodeInterface(stored any, v reflect.Value, path string) error {
	if v.NumMethod() != 0 {
		if !v.IsNil() && v.Elem().Kind() == reflect.Pointer {
			return decode(stored, v.Elem(), path)
		}
		return fail(path, "cannot decode into the interface %s", v.Type())
	}
	if stored == nil {
		v.SetZero()
	} else {
		v.Set(reflect.ValueOf(clone(stored)))
	}
	return nil
}

// decodeSelf decodes into a value whose pointer type decodes itself: UnmarshalRQL,
// UnmarshalJSON or, from a string, UnmarshalText, in that order. It reports done false
// when v decodes by its kind instead (a text unmarshaler that is a slice, a map or a
// struct, given no string).
func decodeSelf(stored any, v reflect.Value, path string) (done bool, err error) {
	t := v.Type()
	pt := reflect.PointerTo(t)
	if pt.Implements(rqlUnmarshalType) {
		if err := v.Addr().Interface().(rqlUnmarshaler).UnmarshalRQL(stored); err != nil {
			return true, fail(path, "UnmarshalRQL of %s: %v", t, err)
		}
		return true, nil
	}
	if pt.Implements(unmarshalerType) {
		b, err := toJSON(stored)
		if err != nil {
			return true, fail(path, "%v", err)
		}
		if err := v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(b); err != nil {
			return true, fail(path, "UnmarshalJSON of %s: %v", t, err)
		}
		return true, nil
	}
	if pt.Implements(textUnmarshalType) {
		if s, ok := stored.(string); ok {
			if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
				return true, fail(path, "UnmarshalText of %s: %v", t, err)
			}
			return true, nil
		}
		if v.Kind() != reflect.Slice && v.Kind() != reflect.Map && v.Kind() != reflect.Struct {
			return true, mismatch(path, stored, t)
		}
	}
	return false, nil
}

// decodeSlice decodes a stored binary into a byte slice, else a stored array into a
// new slice.
func decodeSlice(stored any, v reflect.Value, path string) error {
	t := v.Type()
	if t.Elem().Kind() == reflect.Uint8 {
		if b, ok := binary(stored); ok {
			v.SetBytes(b)
			return nil
		}
	}
	list, ok := stored.([]any)
	if !ok {
		return mismatch(path, stored, t)
	}
	s := reflect.MakeSlice(t, len(list), len(list))
	for i, e := range list {
		if err := decode(e, s.Index(i), path+"["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
	}
	v.Set(s)
	return nil
}

// decodeArray decodes a stored array into an array: elements beyond the stored ones
// are zeroed, stored ones beyond the array's length dropped.
func decodeArray(stored any, v reflect.Value, path string) error {
	list, ok := stored.([]any)
	if !ok {
		return mismatch(path, stored, v.Type())
	}
	for i := range v.Len() {
		if i < len(list) {
			if err := decode(list[i], v.Index(i), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		} else {
			v.Index(i).SetZero()
		}
	}
	return nil
}

func decodeTime(stored any, v reflect.Value, path string) error {
	switch s := stored.(type) {
	case time.Time:
		v.Set(reflect.ValueOf(s))
		return nil
	case string:
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return fail(path, "time %q: %v", s, err)
		}
		v.Set(reflect.ValueOf(tm))
		return nil
	}
	return mismatch(path, stored, v.Type())
}

// binary reads a stored binary: []byte as the driver gives it, or base64 text.
func binary(stored any) ([]byte, bool) {
	switch b := stored.(type) {
	case []byte:
		return append([]byte(nil), b...), true
	case string:
		out, err := base64.StdEncoding.DecodeString(b)
		return out, err == nil
	}
	return nil, false
}

func decodeStruct(stored any, v reflect.Value, path string) error {
	obj, ok := stored.(map[string]any)
	if !ok {
		return mismatch(path, stored, v.Type())
	}
	for _, f := range fieldsOf(v.Type()) {
		val, ok := lookup(obj, f)
		if !ok {
			continue
		}
		fv, err := fieldToSet(v, f.index)
		if err != nil {
			return fail(path+"."+f.name, "%v", err)
		}
		if f.quoted {
			if s, ok := val.(string); ok && val != nil {
				var parsed any
				if err := json.Unmarshal([]byte(s), &parsed); err != nil {
					return fail(path+"."+f.name, "a ,string field holds %q", s)
				}
				if fv.Kind() == reflect.String {
					if str, ok := parsed.(string); ok {
						val = str
					}
				} else {
					val = parsed
				}
			}
		}
		if err := decode(val, fv, path+"."+f.name); err != nil {
			return err
		}
	}
	return nil
}

// lookup finds f's value in a stored object: by its stored name; else, for documents
// stored by older rules, by that name in any case (as encoding/json matches), then by the
// field's Go name in any case.
func lookup(obj map[string]any, f field) (any, bool) {
	if val, ok := obj[f.name]; ok {
		return val, true
	}
	for _, name := range []string{f.name, f.goName} {
		for k, val := range obj {
			if strings.EqualFold(k, name) {
				return val, true
			}
		}
	}
	return nil, false
}

// fieldToSet is v's field at index, allocating the embedded pointers on the way.
func fieldToSet(v reflect.Value, index []int) (reflect.Value, error) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !v.CanSet() {
					return reflect.Value{}, fmt.Errorf("cannot set an embedded pointer to the unexported %s", v.Type().Elem())
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, nil
}

func decodeMap(stored any, v reflect.Value, path string) error {
	obj, ok := stored.(map[string]any)
	if !ok {
		return mismatch(path, stored, v.Type())
	}
	t := v.Type()
	if v.IsNil() {
		v.Set(reflect.MakeMapWithSize(t, len(obj)))
	}
	for k, val := range obj {
		key := reflect.New(t.Key()).Elem()
		switch {
		case reflect.PointerTo(t.Key()).Implements(textUnmarshalType):
			if err := key.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(k)); err != nil {
				return fail(path, "map key %q: %v", k, err)
			}
		case t.Key().Kind() == reflect.String:
			key.SetString(k)
		case key.CanInt():
			n, err := strconv.ParseInt(k, 10, 64)
			if err != nil || key.OverflowInt(n) {
				return fail(path, "map key %q is not a %s", k, t.Key())
			}
			key.SetInt(n)
		case key.CanUint():
			n, err := strconv.ParseUint(k, 10, 64)
			if err != nil || key.OverflowUint(n) {
				return fail(path, "map key %q is not a %s", k, t.Key())
			}
			key.SetUint(n)
		default:
			return fail(path, "cannot decode into a map with %s keys", t.Key())
		}
		elem := reflect.New(t.Elem()).Elem()
		if err := decode(val, elem, path+"."+k); err != nil {
			return err
		}
		v.SetMapIndex(key, elem)
	}
	return nil
}

func decodeScalar(stored any, v reflect.Value, path string) error {
	t := v.Type()
	switch v.Kind() {
	case reflect.Bool:
		b, ok := stored.(bool)
		if !ok {
			return mismatch(path, stored, t)
		}
		v.SetBool(b)
		return nil
	case reflect.String:
		s, ok := stored.(string)
		if !ok {
			return mismatch(path, stored, t)
		}
		v.SetString(s)
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		f, ok := docfmt.Number(stored)
		if !ok {
			return mismatch(path, stored, t)
		}
		switch {
		case v.CanFloat():
			if v.OverflowFloat(f) {
				return fail(path, "%v overflows %s", f, t)
			}
			v.SetFloat(f)
		case v.CanInt():
			if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 || v.OverflowInt(int64(f)) {
				return fail(path, "%v does not fit %s", f, t)
			}
			v.SetInt(int64(f))
		default:
			if f != math.Trunc(f) || f < 0 || f >= math.MaxUint64 || v.OverflowUint(uint64(f)) {
				return fail(path, "%v does not fit %s", f, t)
			}
			v.SetUint(uint64(f))
		}
		return nil
	}
	return fail(path, "cannot decode into %s", t)
}

// toJSON writes a stored tree as JSON text, times in RFC 3339, for a json.Unmarshaler.
func toJSON(stored any) ([]byte, error) {
	return json.Marshal(stored)
}

// clone copies the maps, slices and binaries of a stored tree, so that a value decoded
// into an interface shares nothing with the job it came from.
func clone(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = clone(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = clone(e)
		}
		return out
	case []byte:
		return append([]byte(nil), v...)
	}
	return v
}
