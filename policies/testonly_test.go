package policies

import "io"

// Test-only helpers, kept out of the production files (deadcode).

// FormatPolicySaveString is the inverse of ParsePolicySaveString.
func FormatPolicySaveString(q QueuePolicy) string {
	return q.Queue + ";" + FormatWeightString(q.Info.RouterWeights) + ";" +
		FormatWeightString(q.Info.AMRMWeights) + ";" + JavaFloatString(q.Info.HeadroomAlpha)
}

// ParseMachineList reads a machine-list file's content.
func ParseMachineList(r io.Reader) (*MachineList, error) {
	t, err := parseMachineTable(r)
	if err != nil {
		return nil, err
	}
	m := &MachineList{}
	m.table.Store(t)
	return m, nil
}
