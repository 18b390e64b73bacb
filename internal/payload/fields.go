package payload

import (
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// field is one stored field of a struct type.
type field struct {
	name      string // the stored key
	goName    string // the Go field's name, for documents stored by it
	index     []int  // the path of field indexes from the outer struct
	typ       reflect.Type
	omitEmpty bool
	omitZero  bool
	quoted    bool // the ,string option: a number or bool stored as a string
	tagged    bool // named by a tag
}

var fieldCache sync.Map // reflect.Type → []field

// fieldsOf returns the stored fields of struct type t, in the order encoding/json writes
// them, following its rules for embedded structs: a field at a shallower depth hides a
// deeper one of the same name; at equal depth a tagged one wins, and two untagged (or two
// tagged) ones cancel out.
func fieldsOf(t reflect.Type) []field {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]field)
	}
	f, _ := fieldCache.LoadOrStore(t, typeFields(t))
	return f.([]field)
}

// tagOf is the tag that names a field: rethinkdb or gorethink where present, else json.
func tagOf(sf reflect.StructField) (string, bool) {
	for _, key := range []string{"rethinkdb", "gorethink", "json"} {
		if tag, ok := sf.Tag.Lookup(key); ok {
			return tag, true
		}
	}
	return "", false
}

// typeFields collects the stored fields of struct type t, breadth first through its
// untagged embedded structs (one depth a pass), and keeps the dominant one of each name.
func typeFields(t reflect.Type) []field {
	type queued struct {
		typ   reflect.Type
		index []int
	}
	current, next := []queued{}, []queued{{typ: t}}
	visited := map[reflect.Type]bool{}
	var fields []field
	// count[t] is how many times struct type t was met at this depth; nextCount, at the
	// next one. A type met twice at one depth cancels its fields (as encoding/json does).
	count, nextCount := map[reflect.Type]int{}, map[reflect.Type]int{}
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, q := range current {
			if visited[q.typ] {
				continue
			}
			visited[q.typ] = true
			for i := range q.typ.NumField() {
				f, promoted, ok := storedField(q.typ.Field(i), append(slices.Clone(q.index), i))
				switch {
				case !ok:
				case promoted != nil:
					// An untagged embedded struct: its fields are promoted, one level deeper.
					nextCount[promoted]++
					if nextCount[promoted] == 1 {
						next = append(next, queued{typ: promoted, index: f.index})
					}
				default:
					fields = append(fields, f)
					if count[q.typ] > 1 {
						// The embedding type was met twice at this depth: its fields annihilate;
						// one copy is enough for the dominance pass to drop them.
						fields = append(fields, f)
					}
				}
			}
		}
	}
	return dominantFields(fields)
}

// storedField reads struct field sf, at index (the path of field indexes from the outer
// struct): ok is false when it is not stored (unexported, or tagged "-"); promoted is the
// struct type of an untagged embedded struct, whose fields are stored in its place (f
// then holds only its index); else f is the field.
func storedField(sf reflect.StructField, index []int) (f field, promoted reflect.Type, ok bool) {
	if sf.Anonymous {
		ft := sf.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if !sf.IsExported() && ft.Kind() != reflect.Struct {
			return field{}, nil, false
		}
	} else if !sf.IsExported() {
		return field{}, nil, false
	}
	tag, _ := tagOf(sf)
	if tag == "-" {
		return field{}, nil, false
	}
	name, opts, _ := strings.Cut(tag, ",")
	if !validName(name) {
		name = ""
	}
	ft := sf.Type
	if ft.Name() == "" && ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
		return field{index: index}, ft, true
	}
	f = field{
		name: name, goName: sf.Name, index: index, typ: sf.Type, tagged: name != "",
		omitEmpty: hasOpt(opts, "omitempty"), omitZero: hasOpt(opts, "omitzero"),
		quoted: hasOpt(opts, "string") && quotable(ft.Kind()),
	}
	if f.name == "" {
		f.name = sf.Name
	}
	return f, nil, true
}

// quotable reports whether the ,string option applies to a field of kind k: a bool, a
// number or a string.
func quotable(k reflect.Kind) bool {
	switch k {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.String:
		return true
	}
	return false
}

// dominantFields keeps, of the fields of each name, the dominant one (see dominant), in
// the order of their indexes.
func dominantFields(fields []field) []field {
	// Sort by name, then depth, then tagged first, then index order, to pick dominant fields.
	slices.SortStableFunc(fields, func(a, b field) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := len(a.index) - len(b.index); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	out := fields[:0:0]
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		if f, ok := dominant(fields[i:j]); ok {
			out = append(out, f)
		}
		i = j
	}
	slices.SortFunc(out, func(a, b field) int { return slices.Compare(a.index, b.index) })
	return out
}

// dominant picks the field that wins among fields of one name, sorted as dominantFields
// sorts them; none wins when two at the shallowest depth are alike tagged or untagged.
func dominant(fs []field) (field, bool) {
	if len(fs) > 1 && len(fs[0].index) == len(fs[1].index) && fs[0].tagged == fs[1].tagged {
		return field{}, false
	}
	return fs[0], true
}

func hasOpt(opts, want string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// validName is encoding/json's rule for a tag's name.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
