package payload

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestUnknownNamesTheKeysDecodeWouldDrop(t *testing.T) {
	type item struct {
		SKU string `json:"sku"`
		N   int    `json:"n"`
	}
	type email struct {
		To      string          `json:"to"`
		Subject string          // stored as "Subject"
		Items   []item          `json:"items"`
		Extra   map[string]item `json:"extra"`
		Sent    time.Time       `json:"sent"`
		Raw     json.RawMessage `json:"raw"`
		Any     any             `json:"any"`
		Next    *item           `json:"next"`
	}
	for _, tt := range []struct {
		name   string
		stored any
		want   []string
	}{
		{"every key taken", map[string]any{"to": "a", "Subject": "s", "items": []any{map[string]any{"sku": "x", "n": 1.0}}}, nil},
		{"older documents: any case, Go names", map[string]any{"TO": "a", "subject": "s"}, nil},
		{"another struct's payload", map[string]any{"address": "a", "title": "t"}, []string{".address", ".title"}},
		{"nested in a slice", map[string]any{"items": []any{map[string]any{"sku": "x"}, map[string]any{"qty": 2.0}}}, []string{".items[1].qty"}},
		{"nested in a map and a pointer", map[string]any{"extra": map[string]any{"k": map[string]any{"colour": "red"}}, "next": map[string]any{"price": 1.0}},
			[]string{".extra.k.colour", ".next.price"}},
		{"self-decoding and interface fields take anything", map[string]any{"raw": map[string]any{"x": 1.0}, "any": map[string]any{"y": 2.0}}, nil},
		{"a time is a value, not an object", map[string]any{"sent": time.Now()}, nil},
		{"null and a value of another shape are Decode's to judge", map[string]any{"items": "not a list", "next": nil}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Unknown(tt.stored, reflect.TypeFor[email]()))
		})
	}
	assert.Nil(t, Unknown(map[string]any{"a": 1.0}, reflect.TypeFor[map[string]any]()), "a map takes every key")
	assert.Equal(t, []string{"[0].b"}, Unknown([]any{map[string]any{"b": 1.0}}, reflect.TypeFor[[]struct{ A int }]()))
}
