package rmrest

import (
	"encoding/json"
	"encoding/xml"
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
}

func (a *App) wire() appWire {
	w := appWire{appPlain: appPlain(*a)}
	if a.HasAppNodeLabelExpression || a.AppNodeLabelExpression != "" {
		w.AppNodeLabelExpression = &a.AppNodeLabelExpression
	}
	if a.HasAMNodeLabelExpression || a.AMNodeLabelExpression != "" {
		w.AMNodeLabelExpression = &a.AMNodeLabelExpression
	}
	return w
}

// MarshalJSON renders a set but empty label expression as "".
func (a App) MarshalJSON() ([]byte, error) { return json.Marshal(a.wire()) }

// UnmarshalJSON records which label expressions the document carried.
func (a *App) UnmarshalJSON(b []byte) error {
	var w appWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*a = App(w.appPlain)
	if w.AppNodeLabelExpression != nil {
		a.AppNodeLabelExpression, a.HasAppNodeLabelExpression = *w.AppNodeLabelExpression, true
	}
	if w.AMNodeLabelExpression != nil {
		a.AMNodeLabelExpression, a.HasAMNodeLabelExpression = *w.AMNodeLabelExpression, true
	}
	return nil
}

// MarshalXML renders a set but empty label expression as an empty element.
func (a App) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	if start.Name.Local == "" || start.Name.Local == "App" {
		// A root App: encoding/xml names a Marshaler by its Go type.
		start.Name = xml.Name{Local: "app"}
	}
	return e.EncodeElement(a.wire(), start)
}
