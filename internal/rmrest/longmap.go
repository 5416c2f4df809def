package rmrest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// LongMap is a Java Map<String, Long> as Hadoop's Jersey/JAXB JSON renders
// it: one object whose members are all named "entry", each
// {"key":...,"value":"<number as string>"}, e.g.
//
//	{"entry":{"key":"memory-mb","value":"0"},"entry":{"key":"vcores","value":"0"}}
//
// The repeated key is legal JSON that encoding/json cannot produce or keep,
// hence the custom codec. An empty map is {}.
type LongMap []MapEntry

// MapEntry is one map entry.
type MapEntry struct {
	Key   string `json:"key" xml:"key"`
	Value string `json:"value" xml:"value"`
}

// maxMapEntries bounds what UnmarshalJSON accepts.
const maxMapEntries = 4096

// Get returns the value of key as a number.
func (m LongMap) Get(key string) (int64, bool) {
	for _, e := range m {
		if e.Key == key {
			v, err := strconv.ParseInt(e.Value, 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}

// MarshalJSON writes the repeated-"entry" form.
func (m LongMap) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"entry":`)
		v, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads the repeated-"entry" form, an "entry" array (other
// JSON providers), and null; other members are ignored.
func (m *LongMap) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		*m = nil
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("rmrest: map: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("rmrest: map: not a JSON object")
	}
	var out LongMap
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return fmt.Errorf("rmrest: map: %w", err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("rmrest: map: %w", err)
		}
		if kt != "entry" {
			continue
		}
		raw = bytes.TrimSpace(raw)
		var entries []MapEntry
		if len(raw) > 0 && raw[0] == '[' {
			if err := json.Unmarshal(raw, &entries); err != nil {
				return fmt.Errorf("rmrest: map entries: %w", err)
			}
		} else {
			var e MapEntry
			if err := json.Unmarshal(raw, &e); err != nil {
				return fmt.Errorf("rmrest: map entry: %w", err)
			}
			entries = append(entries, e)
		}
		if len(out)+len(entries) > maxMapEntries {
			return fmt.Errorf("rmrest: map: more than %d entries", maxMapEntries)
		}
		out = append(out, entries...)
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("rmrest: map: %w", err)
	}
	*m = out
	return nil
}
