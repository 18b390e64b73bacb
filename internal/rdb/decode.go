package rdb

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"gopkg.in/rethinkdb/rethinkdb-go.v6/encoding"
)

// AsRead returns doc as the driver returns it when it reads it back from the table:
// numbers as float64, objects as map[string]any, times and binaries as time.Time and
// []byte. A job built from it is the job a claim's answer would have given.
func AsRead(doc any) (map[string]any, error) {
	tree, err := encoding.Encode(doc)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	b, err := json.Marshal(tree)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if _, err := nativePseudoTypes(out); err != nil {
		return nil, err
	}
	return out, nil
}

// nativePseudoTypes replaces, in place, the TIME and BINARY pseudo-type objects of an
// encoded tree by the time.Time and []byte values the driver gives for them on reading.
func nativePseudoTypes(v any) (any, error) {
	switch v := v.(type) {
	case []any:
		for i, e := range v {
			var err error
			if v[i], err = nativePseudoTypes(e); err != nil {
				return nil, err
			}
		}
	case map[string]any:
		for k, e := range v {
			var err error
			if v[k], err = nativePseudoTypes(e); err != nil {
				return nil, err
			}
		}
		switch v["$reql_type$"] {
		case "TIME":
			epoch, ok1 := v["epoch_time"].(float64)
			zone, ok2 := v["timezone"].(string)
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("bad TIME pseudo-type %v", v)
			}
			// As the driver reads times: to the millisecond, in the stored offset.
			t := time.UnixMilli(int64(math.Round(epoch * 1000)))
			if off, err := time.Parse("-07:00", zone); err == nil {
				_, secs := off.Zone()
				t = t.In(time.FixedZone(zone, secs))
			}
			return t, nil
		case "BINARY":
			data, _ := v["data"].(string)
			b, err := base64.StdEncoding.DecodeString(data)
			if err != nil {
				return nil, fmt.Errorf("bad BINARY pseudo-type: %w", err)
			}
			return b, nil
		}
	}
	return v, nil
}
