package writeback

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/yarnfed/yarnfed/gpg/capacity"
	"github.com/yarnfed/yarnfed/gpg/kube"
)

// yarn-copilot's SetYARNAllocatedResource for 4 vcores and 4096 MB, as
// json.Marshal writes its ThirdPartyAllocations (resource.NewQuantity(4000,
// DecimalSI) is "4k", NewQuantity(4096<<20, BinarySI) is "4Gi").
const copilot4x4096 = `{"allocations":[{"name":"hadoop-yarn","priority":"koord-batch","resources":{"kubernetes.io/batch-cpu":"4k","kubernetes.io/batch-memory":"4Gi"}}]}`

func TestEntryShapeIsYarnCopilots(t *testing.T) {
	b := ToBatch(capacity.Resources{VCores: 4, MemoryMB: 4096})
	got, err := parsed{ours: -1}.with(b)
	if err != nil {
		t.Fatal(err)
	}
	if got != copilot4x4096 {
		t.Errorf("annotation\n got %s\nwant %s", got, copilot4x4096)
	}
	// And it reads back as koord-manager would sum it.
	p, err := parseAllocations(got, true)
	if err != nil || p.ours != 0 || p.oursVal != (kube.Batch{MilliCPU: 4000, Memory: 4 << 30}) {
		t.Errorf("parse back: %+v %v", p, err)
	}
}

func TestOtherEntriesKept(t *testing.T) {
	in := `{"allocations":[{"name":"other-scheduler","priority":"koord-batch","resources":{"kubernetes.io/batch-cpu":"2k"}},` +
		`{"name":"hadoop-yarn","priority":"koord-batch","resources":{"kubernetes.io/batch-cpu":"1k","kubernetes.io/batch-memory":"1Gi"}}]}`
	p, err := parseAllocations(in, true)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.with(kube.Batch{MilliCPU: 3000, Memory: 3 << 30})
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Allocations []entry `json:"allocations"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Allocations) != 2 || v.Allocations[0].Name != "other-scheduler" || v.Allocations[1].Name != AllocationName ||
		batchOf(v.Allocations[1].Resources) != (kube.Batch{MilliCPU: 3000, Memory: 3 << 30}) {
		t.Errorf("rewritten: %s", out)
	}
}

func TestOwner(t *testing.T) {
	w4 := encodeWritten(kube.Batch{MilliCPU: 4000, Memory: 4 << 30})
	w2 := encodeWritten(kube.Batch{MilliCPU: 2000, Memory: 2 << 30})
	tests := []struct {
		name      string
		ann       string
		annOK     bool
		written   string
		writtenOK bool
		want      ownership
	}{
		{"nothing yet", "", false, "", false, free},
		{"an entry list without hadoop-yarn", `{"allocations":[{"name":"x","priority":"koord-batch"}]}`, true, "", false, free},
		{"ours", copilot4x4096, true, w4, true, ours},
		{"koord-yarn-operator's entry, no record", copilot4x4096, true, "", false, foreign},
		{"overwritten by someone else", copilot4x4096, true, w2, true, foreign},
		{"entry removed (a hand-over)", `{"allocations":[]}`, true, w4, true, free},
		{"annotation removed (a hand-over)", "", false, w4, true, free},
		{"unreadable annotation", `{"allocations":`, true, "", false, foreign},
		{"unreadable record", copilot4x4096, true, "{", true, foreign},
	}
	for _, tc := range tests {
		p, perr := parseAllocations(tc.ann, tc.annOK)
		if got, why := owner(p, perr, tc.written, tc.writtenOK); got != tc.want {
			t.Errorf("%s: owner = %v (%s), want %v", tc.name, got, why, tc.want)
		}
	}
	if _, err := parseAllocations(`[]`, true); !errors.Is(err, ErrBadAllocations) {
		t.Errorf("a JSON array: %v, want ErrBadAllocations", err)
	}
}
