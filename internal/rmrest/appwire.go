package rmrest

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
)

// An RM's AppInfo distinguishes a node label expression that is null
// (omitted) from one that is empty (""): a proxy that re-renders the
// document must keep that difference. appWire is App with the two
// expressions as pointers; its fields shadow the embedded ones in both
// encoders.
type appPlain App // App without its methods

type appWire struct {
	appPlain
	AppNodeLabelExpression *string `json:"appNodeLabelExpression,omitempty" xml:"appNodeLabelExpression,omitempty"`
	AMNodeLabelExpression  *string `json:"amNodeLabelExpression,omitempty" xml:"amNodeLabelExpression,omitempty"`
	// ResourceInfoJSON shadows App.ResourceInfo in JSON (the shallower
	// field wins): an RM's resourceInfo, kept as it sent it (App.resourceInfoJSON).
	ResourceInfoJSON json.RawMessage `json:"resourceInfo,omitempty" xml:"-"`
}

// wire is a ready to encode: JSON carries resourceInfo as bytes (the RM's,
// or the typed value's encoding), XML the typed value (decoded from the
// RM's bytes if need be).
func (a *App) wire(forXML bool) (appWire, error) {
	w := appWire{appPlain: appPlain(*a)}
	if a.HasAppNodeLabelExpression || a.AppNodeLabelExpression != "" {
		w.AppNodeLabelExpression = &a.AppNodeLabelExpression
	}
	if a.HasAMNodeLabelExpression || a.AMNodeLabelExpression != "" {
		w.AMNodeLabelExpression = &a.AMNodeLabelExpression
	}
	switch {
	case forXML:
		ri, err := a.Resources()
		if err != nil {
			return w, err
		}
		w.ResourceInfo = ri
	case a.ResourceInfo != nil:
		b, err := json.Marshal(a.ResourceInfo)
		if err != nil {
			return w, err
		}
		w.ResourceInfoJSON = b
	default:
		w.ResourceInfoJSON = a.resourceInfoJSON
	}
	return w, nil
}

// app is the App w holds: the label expressions' presence recorded, an
// RM's resourceInfo kept undecoded.
func (w *appWire) app() App {
	a := App(w.appPlain)
	if w.AppNodeLabelExpression != nil {
		a.AppNodeLabelExpression, a.HasAppNodeLabelExpression = *w.AppNodeLabelExpression, true
	}
	if w.AMNodeLabelExpression != nil {
		a.AMNodeLabelExpression, a.HasAMNodeLabelExpression = *w.AMNodeLabelExpression, true
	}
	if len(w.ResourceInfoJSON) > 0 && string(w.ResourceInfoJSON) != "null" {
		a.resourceInfoJSON = w.ResourceInfoJSON
	}
	return a
}

// Resources is the application's usage per partition: ResourceInfo if
// set, else the resourceInfo its RM sent, decoded now (nil: none).
func (a *App) Resources() (*AppResourceInfo, error) {
	if a.ResourceInfo != nil || len(a.resourceInfoJSON) == 0 {
		return a.ResourceInfo, nil
	}
	var ri AppResourceInfo
	if err := json.Unmarshal(a.resourceInfoJSON, &ri); err != nil {
		return nil, fmt.Errorf("rmrest: app %s: resourceInfo: %w", a.ID, err)
	}
	return &ri, nil
}

// MarshalJSON renders a set but empty label expression as "", and an RM's
// resourceInfo as it sent it.
func (a App) MarshalJSON() ([]byte, error) {
	w, err := a.wire(false)
	if err != nil {
		return nil, err
	}
	return json.Marshal(w)
}

// UnmarshalJSON records which label expressions the document carried and
// keeps resourceInfo undecoded (Resources decodes it).
func (a *App) UnmarshalJSON(b []byte) error {
	var w appWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*a = w.app()
	return nil
}

// MarshalXML renders a set but empty label expression as an empty element.
func (a App) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	if start.Name.Local == "" || start.Name.Local == "App" {
		// A root App: encoding/xml names a Marshaler by its Go type.
		start.Name = xml.Name{Local: "app"}
	}
	w, err := a.wire(true)
	if err != nil {
		return err
	}
	return e.EncodeElement(w, start)
}
