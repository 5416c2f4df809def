// Package config is the one configuration mechanism of every role:
// defaults, then a JSON file, then flags, then Validate (Loader), with one
// duration type (Duration) in files and on the command line.
package config

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration written as a Go duration string ("500ms",
// "1m30s") in JSON config files and on the command line. *Duration is a
// pflag.Value, so a config field binds to a flag as it is.
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON accepts a Go duration string only: a bare number would be
// ambiguous (seconds? nanoseconds?), so it is an error that says so.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"10s\": %w", err)
	}
	return d.Set(s)
}

// String formats the duration (pflag.Value).
func (d *Duration) String() string { return time.Duration(*d).String() }

// Set parses a Go duration string (pflag.Value).
func (d *Duration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Type names the flag type in help output (pflag.Value).
func (d *Duration) Type() string { return "duration" }
