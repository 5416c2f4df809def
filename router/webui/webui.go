// Package webui renders the router's web UI: the page templates, their
// stylesheet and helpers, embedded and parsed once at start (a template
// error fails every test that imports the package, not a request), and the
// headers every page carries (no script may run). What the pages show is
// the router's business: it gathers the numbers with the code its REST API
// runs and hands each page its data in View.Data; the templates read that
// data's exported fields.
package webui

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"
)

//go:embed templates/*.tmpl static/*
var files embed.FS

// pageNames are the pages; each is templates/NAME.tmpl inside the layout.
var pageNames = []string{"about", "federation", "nodes", "apps", "app", "policies"}

var pages = parsePages()

func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{
		"ts": func(t time.Time) string {
			if t.IsZero() || t.UnixMilli() <= 0 {
				return "N/A"
			}
			return t.UTC().Format("2006-01-02 15:04:05 MST")
		},
		"ms": func(v int64) string {
			if v <= 0 {
				return "N/A"
			}
			return time.UnixMilli(v).UTC().Format("2006-01-02 15:04:05 MST")
		},
		"age": func(t time.Time) string {
			if t.IsZero() || t.UnixMilli() <= 0 {
				return ""
			}
			return time.Since(t).Round(time.Second).String() + " ago"
		},
		"short": func(class string) string { return class[strings.LastIndex(class, ".")+1:] },
		"pct":   func(f float32) string { return fmt.Sprintf("%.1f%%", f) },
		"weight": func(w float32, ok bool) string {
			if !ok {
				return "-"
			}
			return fmt.Sprintf("%g", w)
		},
	}
	base := template.Must(template.New("layout").Funcs(funcs).ParseFS(files, "templates/layout.tmpl"))
	out := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		out[name] = template.Must(template.Must(base.Clone()).ParseFS(files, "templates/"+name+".tmpl"))
	}
	return out
}

// View is what every page template gets.
type View struct {
	Page    string
	Title   string
	User    string
	Now     time.Time
	Version string
	// Err is the failure to show above whatever could be rendered (the
	// REST call would have answered it as its error).
	Err  string
	Data any
}

// Render writes v's page (v.Page) with status. A template that fails is
// an error and nothing is written: the caller answers 500.
func Render(w http.ResponseWriter, status int, v View) error {
	tmpl, ok := pages[v.Page]
	if !ok {
		return fmt.Errorf("web UI: no page %q", v.Page)
	}
	var buf bytes.Buffer
	if err := tmpl.ExecuteTemplate(&buf, "layout", v); err != nil {
		return err
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	// No script may run, whatever a user-supplied name smuggles in.
	hdr.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "same-origin")
	hdr.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
	return nil
}

// Static serves the stylesheet (mount it at /static/).
func Static() http.Handler {
	static, _ := fs.Sub(files, "static")
	return http.FileServerFS(static)
}
