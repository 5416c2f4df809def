package restwire_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/router/restwire"
)

// TestJSONListAsMarshal: a streamed list is byte for byte what json.Marshal
// made of the whole document before (so clients see the same answer), for
// an empty list (Jersey's {"apps":{}}), one part and several parts.
func TestJSONListAsMarshal(t *testing.T) {
	a := func(id string) rmrest.App {
		return rmrest.App{ID: id, Name: "<b>&", HasAMNodeLabelExpression: true, ResourceSecondsMap: rmrest.LongMap{{Key: "memory-mb", Value: "1"}}}
	}
	for _, parts := range [][][]rmrest.App{
		nil,
		{{}, {}},
		{{a("application_1_0001")}},
		{{a("application_1_0001"), a("application_1_0002")}, {}, {a("application_2_0001")}},
	} {
		var all []rmrest.App
		for _, p := range parts {
			all = append(all, p...)
		}
		want, err := json.Marshal(rmrest.AppsResponse{Apps: rmrest.Apps{App: all}})
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := restwire.JSONList(&got, "apps", "app", parts, func(a rmrest.App) ([]byte, error) { return a.MarshalJSON() }); err != nil {
			t.Fatal(err)
		}
		if got.String() != string(want) {
			t.Fatalf("streamed:\n%s\nmarshalled:\n%s", got.String(), want)
		}
	}
}
