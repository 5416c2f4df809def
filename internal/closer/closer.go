// Package closer closes what a component opened, in order, skipping what
// it never got to open.
//
//	_ = closer.All(p.srv, p.ln, p.web, p.webLn)
package closer

import (
	"errors"
	"io"
	"reflect"
)

// All closes each of cs in order and returns their errors joined. A nil
// interface or a nil pointer (a server or listener the component had not
// built yet, or does not use) counts as not set and is skipped, so a
// half-built component can close what it has. Every closer is closed even
// when an earlier one fails.
func All(cs ...io.Closer) error {
	var errs []error
	for _, c := range cs {
		if unset(c) {
			continue
		}
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// unset: c is a nil interface, or holds a nil pointer (an *http.Server
// field never assigned is non-nil as an io.Closer and would panic).
func unset(c io.Closer) bool {
	if c == nil {
		return true
	}
	v := reflect.ValueOf(c)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
