package payload

import (
	"encoding/json"
	"errors"
	"math"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"
)

type Inner struct {
	A int    `json:"a"`
	B string `json:"b,omitempty"`
}

type Base struct {
	ID   string `json:"id"`
	Name string
}

type Other struct {
	Name string // collides with Base.Name at the same depth: both dropped
}

type withEmbedded struct {
	Base
	Other
	*Inner
	Own string `json:"own"`
}

type tagged struct {
	To      string            `json:"to"`
	Skip    string            `json:"-"`
	Dash    string            `json:"-,"`
	Empty   string            `json:",omitempty"`
	Zero    Inner             `json:"zero,omitzero"`
	Count   int               `json:"count,string"`
	OK      bool              `json:"ok,string"`
	Keys    map[int]string    `json:"keys"`
	IP      net.IP            `json:"ip"`
	Raw     json.RawMessage   `json:"raw"`
	Nested  []Inner           `json:"nested"`
	Ptr     *Inner            `json:"ptr"`
	NilMap  map[string]string `json:"nilMap"`
	hidden  int
	Float32 float32 `json:"f32"`
}

// jsonTree is v as encoding/json stores it, read back into an any.
func jsonTree(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEncodeFollowsEncodingJSON: for values without times, binaries or rethinkdb tags,
// the stored tree is what encoding/json writes, and decoding it gives what encoding/json
// decodes.
func TestEncodeFollowsEncodingJSON(t *testing.T) {
	for _, c := range []struct {
		name string
		v    any
	}{
		{"nil", nil},
		{"string", "x"},
		{"int", 42},
		{"map", map[string]any{"a": 1, "b": []any{true, "x", 2.5}}},
		{"tags", tagged{To: "ann", Skip: "no", Dash: "yes", Count: 7, OK: true, Keys: map[int]string{1: "one"},
			IP: net.IPv4(10, 0, 0, 1), Raw: json.RawMessage(`{"z":[1,2]}`), Nested: []Inner{{A: 1}, {A: 2, B: "b"}},
			Ptr: &Inner{A: 3}, hidden: 5, Float32: 0.1}},
		{"tags, zero", tagged{}},
		{"embedded", withEmbedded{Base: Base{ID: "i", Name: "n"}, Other: Other{Name: "o"}, Inner: &Inner{A: 9}, Own: "w"}},
		{"embedded nil pointer", withEmbedded{Own: "w"}},
		{"pointer", &Inner{A: 1}},
		{"slice of maps", []map[string]int{{"a": 1}}},
		{"array", [2]string{"a", "b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Encode(c.v)
			if err != nil {
				t.Fatal(err)
			}
			if want := jsonTree(t, c.v); !reflect.DeepEqual(got, want) {
				t.Errorf("Encode = %#v\nencoding/json = %#v", got, want)
			}
			if c.v == nil {
				return
			}
			typ := reflect.TypeOf(c.v)
			back := reflect.New(typ)
			if err := Decode(got, back.Interface()); err != nil {
				t.Fatal(err)
			}
			want := reflect.New(typ)
			b, _ := json.Marshal(c.v)
			if err := json.Unmarshal(b, want.Interface()); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back.Elem().Interface(), want.Elem().Interface()) {
				t.Errorf("Decode = %#v\nencoding/json = %#v", back.Elem().Interface(), want.Elem().Interface())
			}
		})
	}
}

type both struct {
	Email  string `rethinkdb:"email_address" json:"email"`
	Legacy string `rethinkdb:",omitempty" json:"legacy"`
	Plain  string `json:"plain"`
}

type withTimes struct {
	SentAt  time.Time  `json:"sentAt"`
	Maybe   *time.Time `json:"maybe"`
	Omitted time.Time  `json:"omitted,omitempty"`
	Bytes   []byte     `json:"bytes"`
}

func TestRethinkDBTagsTimesAndBinaries(t *testing.T) {
	got, err := Encode(both{Email: "a@b", Plain: "p"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"email_address": "a@b", "plain": "p"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rethinkdb tags: %#v, want %#v", got, want)
	}

	when := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	got, err = Encode(withTimes{SentAt: when, Maybe: &when, Bytes: []byte{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]any{"sentAt": when, "maybe": when, "bytes": []byte{1, 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("times: %#v, want %#v", got, want)
	}
	got, err = Encode(withTimes{})
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]any{"sentAt": nil, "maybe": nil, "bytes": nil}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("zero times: %#v, want %#v", got, want)
	}
	var back withTimes
	back.SentAt = when // a stored null sets the zero time
	if err := Decode(got, &back); err != nil || !back.SentAt.IsZero() || back.Maybe != nil {
		t.Errorf("zero times read back as %+v, %v", back, err)
	}
	// Times as text (a JSON export) and binaries as base64 decode too.
	if err := Decode(map[string]any{"sentAt": "2026-11-25T10:00:00Z", "bytes": "AQI="}, &back); err != nil ||
		!back.SentAt.Equal(when) || string(back.Bytes) != "\x01\x02" {
		t.Errorf("text forms read back as %+v, %v", back, err)
	}
}

func TestOldDocumentsStillDecode(t *testing.T) {
	type email struct {
		To     string `json:"to"`
		SentTo string `json:"sent_to"`
		Count  int    `json:"count"`
	}
	// Written before names followed the json tag: by Go field name.
	old := map[string]any{"To": "ann", "SentTo": "bob", "Count": 2.0}
	var got email
	if err := Decode(old, &got); err != nil {
		t.Fatal(err)
	}
	if want := (email{To: "ann", SentTo: "bob", Count: 2}); got != want {
		t.Errorf("old document: %+v, want %+v", got, want)
	}
}

func TestEncodeRefuses(t *testing.T) {
	type cyc struct {
		Next *cyc `json:"next"`
	}
	loop := &cyc{}
	loop.Next = loop
	for _, c := range []struct {
		name string
		v    any
		path string
		why  string
	}{
		{"nan", map[string]any{"x": math.NaN()}, "x", "NaN"},
		{"big int", struct {
			N int64 `json:"n"`
		}{1 << 60}, "n", "beyond"},
		{"utf8", []string{"ok", "\xff"}, "[1]", "UTF-8"},
		{"func", map[string]any{"f": func() {}}, "f", "cannot be stored"},
		{"time", struct {
			When time.Time `json:"when"`
		}{time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}, "when", "outside the years"},
		{"cycle", loop, "next", "cycle"},
		{"bool key", map[bool]int{true: 1}, "", "map keys"},
		{"big json number", json.RawMessage(`{"n":123456789012345678}`), "n", "beyond"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Encode(c.v)
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Encode: %v, want an *Error", err)
			}
			if !strings.HasPrefix(strings.TrimPrefix(pe.Path, "."), c.path) || !strings.Contains(pe.Reason, c.why) {
				t.Errorf("error %q (path %q), want path %q and %q", err, pe.Path, c.path, c.why)
			}
		})
	}
}

func TestDecodeErrorsNameThePath(t *testing.T) {
	var v struct {
		Items []Inner `json:"items"`
	}
	err := Decode(map[string]any{"items": []any{map[string]any{"a": "x"}}}, &v)
	if err == nil || !strings.Contains(err.Error(), "items[0].a") {
		t.Errorf("Decode: %v, want the path items[0].a", err)
	}
	if err := Decode(map[string]any{"a": 1.5}, &Inner{}); err == nil {
		t.Error("1.5 into an int: no error")
	}
	var out Inner
	if err := Decode(nil, out); err == nil {
		t.Error("not a pointer: no error")
	}
}

func TestDecodeIntoAnyCopies(t *testing.T) {
	stored := map[string]any{"list": []any{1.0}}
	var v any
	if err := Decode(stored, &v); err != nil {
		t.Fatal(err)
	}
	v.(map[string]any)["list"].([]any)[0] = 2.0
	if stored["list"].([]any)[0] != 1.0 {
		t.Error("the decoded value shares the stored one")
	}
}
