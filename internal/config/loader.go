package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Loader is one role's configuration mechanism: defaults, then a JSON file
// (--config), then the flags the user set, then Validate. Every role uses
// it the same way:
//
//	cfg := roleDefaults()
//	l := config.NewLoader(cmd.Flags(), &cfg, roleDefaults) // defines --config
//	f.StringVar(&cfg.Addr, "addr", cfg.Addr, "...")        // flags bind to cfg's fields
//	...
//	cfg, err := l.Load() // in RunE, after cobra parsed the flags
//
// A flag's file key is found from the field it writes to: the field's
// address inside cfg, named by the json tags on the way (a nested key is
// "web.read_timeout"). So a flag and its key cannot drift apart; Keys lists
// the pairs, and each role's test checks that every flag has one.
//
// Load keeps the parsed flag values aside, resets cfg to defaults(),
// decodes the file over it strictly (unknown keys are errors), copies the
// fields of the flags the user set back over the file's, and calls
// Validate if *T has one. A set list flag replaces the file's list whole.
// Flags bound outside cfg are left alone.
//
// *Loader is itself the --config flag's pflag.Value, so a test can reach
// the loader of any command through cmd.Flags().Lookup("config").
type Loader[T any] struct {
	fs       *pflag.FlagSet
	cfg      *T
	defaults func() T
	file     string
}

// ConfigFlag is the name of the flag that names the JSON file.
const ConfigFlag = "config"

// NewLoader defines --config on fs and returns the loader of cfg, which
// must hold defaults() (flag defaults are read from it as they are bound).
func NewLoader[T any](fs *pflag.FlagSet, cfg *T, defaults func() T) *Loader[T] {
	l := &Loader[T]{fs: fs, cfg: cfg, defaults: defaults}
	fs.Var(l, ConfigFlag, "JSON config file: every flag's key is in its help text as [file: key]; unknown keys are errors; flags override the file")
	return l
}

// String, Set and Type make *Loader the --config flag's pflag.Value.
func (l *Loader[T]) String() string     { return l.file }
func (l *Loader[T]) Set(s string) error { l.file = s; return nil }
func (l *Loader[T]) Type() string       { return "file" }

// File is the --config value ("" when not given).
func (l *Loader[T]) File() string { return l.file }

// Load builds the effective configuration (also left in the bound struct).
func (l *Loader[T]) Load() (T, error) {
	var zero T
	// Which fields did the user set on the command line?
	var set []fieldPath
	var errs []error
	l.fs.Visit(func(f *pflag.Flag) {
		if f.Name == ConfigFlag {
			return
		}
		p, ok, err := l.fieldOf(f)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			set = append(set, p)
		}
	})
	if err := errors.Join(errs...); err != nil {
		return zero, err
	}
	parsed := *l.cfg
	*l.cfg = l.defaults()
	if l.file != "" {
		b, err := os.ReadFile(l.file)
		if err != nil {
			return zero, fmt.Errorf("config: %w", err)
		}
		clearListsIn(b, reflect.ValueOf(l.cfg).Elem())
		if err := Decode(b, l.cfg); err != nil {
			return zero, fmt.Errorf("config %s: %w", l.file, err)
		}
	}
	dst, src := reflect.ValueOf(l.cfg).Elem(), reflect.ValueOf(&parsed).Elem()
	for _, p := range set {
		dst.FieldByIndex(p.index).Set(src.FieldByIndex(p.index))
	}
	if v, ok := any(l.cfg).(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			if l.file != "" {
				return zero, fmt.Errorf("config (defaults, %s, flags): %w", l.file, err)
			}
			return zero, fmt.Errorf("config: %w", err)
		}
	}
	return *l.cfg, nil
}

// Keys maps every flag bound to a config field to its file key; unbound
// lists the flags that are not (--config aside): each is a flag that no
// file can set, which a role's test reports.
func (l *Loader[T]) Keys() (keys map[string]string, unbound []string, err error) {
	keys = map[string]string{}
	var errs []error
	l.fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == ConfigFlag {
			return
		}
		p, ok, err := l.fieldOf(f)
		switch {
		case err != nil:
			errs = append(errs, err)
		case ok:
			keys[f.Name] = p.key
		default:
			unbound = append(unbound, f.Name)
		}
	})
	sort.Strings(unbound)
	return keys, unbound, errors.Join(errs...)
}

// DefaultsJSON is the defaults as a file would write them: every key the
// file takes, with its default value.
func (l *Loader[T]) DefaultsJSON() ([]byte, error) { return json.MarshalIndent(l.defaults(), "", "  ") }

// DocumentKeys appends "[file: key]" to the help text of every flag bound
// to a config field, so operators writing a file find its keys in --help.
// Call it once, after the role's flags are bound.
func (l *Loader[T]) DocumentKeys() {
	keys, _, _ := l.Keys()
	for name, key := range keys {
		f := l.fs.Lookup(name)
		f.Usage += " [file: " + key + "]"
	}
}

// fieldPath is one field of the config struct: its index path for reflect
// and its file key.
type fieldPath struct {
	index []int
	key   string
}

var durationType = reflect.TypeFor[time.Duration]()

// fieldOf finds the config field flag f writes to. ok is false when the
// flag's target lies outside the struct.
func (l *Loader[T]) fieldOf(f *pflag.Flag) (fieldPath, bool, error) {
	addr, typ, ok := flagTarget(f.Value)
	if !ok {
		return fieldPath{}, false, nil
	}
	root := reflect.ValueOf(l.cfg).Elem()
	base := root.Addr().Pointer()
	if addr < base || addr >= base+root.Type().Size() {
		return fieldPath{}, false, nil
	}
	for _, p := range jsonFields(root.Type(), nil, "") {
		ft := root.Type().FieldByIndex(p.index).Type
		if root.FieldByIndex(p.index).Addr().Pointer() != addr || ft.Kind() != typ.Kind() || ft.Size() != typ.Size() {
			continue
		}
		if ft == durationType {
			// JSON would read a time.Duration as a bare nanosecond count.
			return fieldPath{}, false, fmt.Errorf("--%s: field %s is a time.Duration; use config.Duration so the file takes \"10s\" as the flag does", f.Name, p.key)
		}
		return p, true, nil
	}
	return fieldPath{}, false, fmt.Errorf("--%s writes inside the config struct but to no field with a JSON key (a json:\"-\" field?)", f.Name)
}

// flagTarget returns the address and type a flag value writes to: the
// pointer itself for pflag's scalar values and for pflag.Value types with
// a pointer receiver (*Duration), or the slice pointer pflag's slice values
// (StringSlice, StringArray, ...) hold in their "value" field.
func flagTarget(v pflag.Value) (uintptr, reflect.Type, bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return 0, nil, false
	}
	elem := rv.Type().Elem()
	if elem.Kind() == reflect.Struct {
		if sf, ok := elem.FieldByName("value"); ok && sf.Type.Kind() == reflect.Pointer {
			p := rv.Elem().FieldByIndex(sf.Index)
			if p.IsNil() {
				return 0, nil, false
			}
			return p.Pointer(), sf.Type.Elem(), true
		}
	}
	return rv.Pointer(), elem, true
}

// jsonFields lists every field encoding/json reads, depth first, with its
// dotted key: json:"-" and unexported fields are skipped, embedded structs
// without a tag name are flattened as encoding/json flattens them.
func jsonFields(t reflect.Type, index []int, prefix string) []fieldPath {
	var out []fieldPath
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		idx := append(append([]int{}, index...), i)
		if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(sf.Type, idx, prefix)...)
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		key := prefix + name
		out = append(out, fieldPath{index: idx, key: key})
		if sf.Type.Kind() == reflect.Struct && sf.Type != durationType {
			out = append(out, jsonFields(sf.Type, idx, key+".")...)
		}
	}
	return out
}

// clearListsIn empties the list and map fields of v that document b sets,
// so that the file's list replaces the default one. encoding/json decodes a
// list element into the default element at that index (and merges maps),
// so a field a file entry leaves out would otherwise keep the default
// entry's value.
func clearListsIn(b []byte, v reflect.Value) {
	var doc any
	if json.Unmarshal(b, &doc) != nil {
		return // Decode reports it
	}
	for _, p := range jsonFields(v.Type(), nil, "") {
		f := v.FieldByIndex(p.index)
		if (f.Kind() == reflect.Slice || f.Kind() == reflect.Map) && inDoc(doc, p.key) {
			f.Set(reflect.Zero(f.Type()))
		}
	}
}

// inDoc reports whether the dotted key is set in doc, matching names
// without regard to case as encoding/json does.
func inDoc(doc any, key string) bool {
	for _, part := range strings.Split(key, ".") {
		m, ok := doc.(map[string]any)
		if !ok {
			return false
		}
		found := false
		for k, v := range m {
			if strings.EqualFold(k, part) {
				doc, found = v, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Decode decodes one JSON document over v (fields it does not name keep
// their values). Unknown keys are errors naming the key, so a misspelt
// option never falls back to a default silently; so is anything after the
// document. Custom UnmarshalJSON methods of config sections must decode
// with Decode too: encoding/json does not pass strictness down to them.
func Decode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err // an unknown key reads: json: unknown field "name"
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON document")
	}
	return nil
}
