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
	if out, ok := fastLongMap(data); ok {
		*m = out
		return nil
	}
	return m.decodeGeneral(data)
}

// decodeGeneral is UnmarshalJSON for every form it takes.
func (m *LongMap) decodeGeneral(data []byte) error {
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

// fastLongMap reads the form every RM sends, {"entry":{"key":"k","value":"v"},...}
// with plain ASCII strings, without a json.Decoder (two of these per
// application made a fifth of decoding an /apps list). Anything else (an
// escape, a non-ASCII byte, a number, another member or order) answers
// false and goes to the general decoder, so both read what they share
// alike (FuzzLongMapFastPath).
func fastLongMap(data []byte) (LongMap, bool) {
	p := longMapParser{b: data}
	if !p.lit('{') {
		return nil, false
	}
	var out LongMap
	if p.lit('}') {
		return out, p.end()
	}
	for {
		if !p.str("entry") || !p.lit(':') || !p.lit('{') || !p.str("key") || !p.lit(':') {
			return nil, false
		}
		k, ok := p.plain()
		if !ok || !p.lit(',') || !p.str("value") || !p.lit(':') {
			return nil, false
		}
		v, ok := p.plain()
		if !ok || !p.lit('}') {
			return nil, false
		}
		if len(out) == maxMapEntries {
			return nil, false // the general decoder names the bound
		}
		out = append(out, MapEntry{Key: k, Value: v})
		if p.lit('}') {
			return out, p.end()
		}
		if !p.lit(',') {
			return nil, false
		}
	}
}

type longMapParser struct {
	b []byte
	i int
}

func (p *longMapParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// lit consumes c after white space.
func (p *longMapParser) lit(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// plain consumes a string of printable ASCII without escapes.
func (p *longMapParser) plain() (string, bool) {
	b, ok := p.plainBytes()
	return string(b), ok
}

func (p *longMapParser) plainBytes() ([]byte, bool) {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	for j := p.i + 1; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			s := p.b[p.i+1 : j]
			p.i = j + 1
			return s, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

// str consumes the string want.
func (p *longMapParser) str(want string) bool {
	s, ok := p.plainBytes()
	return ok && string(s) == want
}

// end reports whether only white space is left.
func (p *longMapParser) end() bool {
	p.ws()
	return p.i == len(p.b)
}
