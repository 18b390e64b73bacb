package payload

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Unknown returns the paths (".to", ".items[2].sku") of the keys of stored, a value as the
// database holds it, that Decode into a value of type t would drop: the keys of an object
// that no field of the struct it decodes into takes, in nested structs, pointers, slices,
// arrays and maps too. A type that decodes itself (json.Unmarshaler,
// encoding.TextUnmarshaler, rethinkdb-go's Unmarshaler), an interface and a map take every
// key. Keys are matched as Decode matches them, so a document stored by older rules has
// no unknown key for being so.
func Unknown(stored any, t reflect.Type) []string {
	var out []string
	unknown(stored, t, "", &out)
	slices.Sort(out)
	return out
}

func unknown(stored any, t reflect.Type, path string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if stored == nil || t == timeType || decodesItself(t) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := stored.(map[string]any)
		if !ok {
			return
		}
		fields := fieldsOf(t)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			f, ok := fieldOfKey(fields, k)
			if !ok {
				*out = append(*out, path+"."+k)
				continue
			}
			unknown(obj[k], f.typ, path+"."+f.name, out)
		}
	case reflect.Map:
		if obj, ok := stored.(map[string]any); ok {
			for k, v := range obj {
				unknown(v, t.Elem(), path+"."+k, out)
			}
		}
	case reflect.Slice, reflect.Array:
		if list, ok := stored.([]any); ok {
			for i, e := range list {
				unknown(e, t.Elem(), path+"["+strconv.Itoa(i)+"]", out)
			}
		}
	}
}

// decodesItself reports whether a value of t decodes itself, whatever keys it is given.
func decodesItself(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Kind() == reflect.Interface || pt.Implements(rqlUnmarshalType) ||
		pt.Implements(unmarshalerType) || pt.Implements(textUnmarshalType)
}

// fieldOfKey is the field that takes the stored key k, as lookup matches them: by its
// stored name, else by that name or its Go name in any case.
func fieldOfKey(fields []field, k string) (field, bool) {
	for _, f := range fields {
		if f.name == k {
			return f, true
		}
	}
	for _, f := range fields {
		if strings.EqualFold(k, f.name) || strings.EqualFold(k, f.goName) {
			return f, true
		}
	}
	return field{}, false
}
