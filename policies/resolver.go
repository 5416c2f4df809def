package policies

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"
)

// SubClusterResolver maps nodes and racks to sub-clusters (Hadoop
// FED/resolver/SubClusterResolver). Lookups are on the hot path of every
// allocate call, so they report misses with ok=false / nil instead of
// allocating errors. Implementations must be safe for concurrent use.
type SubClusterResolver interface {
	// SubClusterForNode returns the sub-cluster that owns node.
	SubClusterForNode(node string) (SubClusterID, bool)
	// SubClustersForRack returns the sub-clusters that own nodes of rack,
	// or nil when the rack is unknown. The slice must not be modified.
	SubClustersForRack(rack string) []SubClusterID
}

// ReservationResolver returns the home sub-cluster of a reservation (the
// reservation-home table of the state store).
type ReservationResolver interface {
	ReservationHome(ctx context.Context, reservationID string) (SubClusterID, error)
}

// MachineList is the resolver Hadoop's DefaultSubClusterResolverImpl
// implements over the yarn.federation.machine-list file: one
// "node,subcluster,rack" per line. Node and rack names are matched
// case-insensitively and trimmed; malformed lines are skipped (as Hadoop
// does) and counted. Reload swaps the whole table atomically, so readers
// never see a half-loaded file.
type MachineList struct {
	table atomic.Pointer[machineTable]
}

type machineTable struct {
	nodes   map[string]SubClusterID
	racks   map[string][]SubClusterID
	skipped int
}

// Machine is one machine-list entry.
type Machine struct {
	Node       string
	SubCluster SubClusterID
	Rack       string
}

// NewMachineList builds a resolver from entries (for example from
// Kubernetes node labels instead of a file).
func NewMachineList(entries []Machine) *MachineList {
	m := &MachineList{}
	m.Set(entries)
	return m
}

// Set replaces the whole table atomically. Entries without a node or a
// sub-cluster are skipped and counted.
func (m *MachineList) Set(entries []Machine) {
	t := &machineTable{nodes: map[string]SubClusterID{}, racks: map[string][]SubClusterID{}}
	for _, e := range entries {
		t.add(e.Node, e.SubCluster, e.Rack)
	}
	t.finish()
	m.table.Store(t)
}

func (t *machineTable) add(node string, id SubClusterID, rack string) {
	node = strings.ToLower(strings.TrimSpace(node))
	id = SubClusterID(strings.TrimSpace(string(id)))
	rack = strings.ToLower(strings.TrimSpace(rack))
	if node == "" || id == "" {
		t.skipped++
		return
	}
	t.nodes[node] = id
	if !slices.Contains(t.racks[rack], id) {
		t.racks[rack] = append(t.racks[rack], id)
	}
}

func (t *machineTable) finish() {
	for _, ids := range t.racks {
		slices.Sort(ids)
	}
}

// maxMachineList bounds the machine-list file size.
const maxMachineList = 64 << 20

// LoadMachineList reads the machine-list file at path.
func LoadMachineList(path string) (*MachineList, error) {
	m := &MachineList{}
	if err := m.Reload(path); err != nil {
		return nil, err
	}
	return m, nil
}

// Reload re-reads path; on error the previous table stays in force.
func (m *MachineList) Reload(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("machine list: %w", err)
	}
	defer f.Close()
	t, err := parseMachineTable(f)
	if err != nil {
		return err
	}
	m.table.Store(t)
	return nil
}

func parseMachineTable(r io.Reader) (*machineTable, error) {
	t := &machineTable{nodes: map[string]SubClusterID{}, racks: map[string][]SubClusterID{}}
	sc := bufio.NewScanner(io.LimitReader(r, maxMachineList))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		parts := javaSplit(string(line), ",")
		if len(parts) != 3 {
			t.skipped++
			continue
		}
		t.add(parts[0], SubClusterID(parts[1]), parts[2])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: machine list: %v", ErrInvalidConfig, err)
	}
	t.finish()
	return t, nil
}

// Skipped returns how many malformed lines the last load ignored.
func (m *MachineList) Skipped() int { return m.table.Load().skipped }

// SubClusterForNode implements SubClusterResolver.
func (m *MachineList) SubClusterForNode(node string) (SubClusterID, bool) {
	id, ok := m.table.Load().nodes[lowerIfNeeded(node)]
	return id, ok
}

// SubClustersForRack implements SubClusterResolver.
func (m *MachineList) SubClustersForRack(rack string) []SubClusterID {
	return m.table.Load().racks[lowerIfNeeded(rack)]
}

// lowerIfNeeded folds case like Hadoop's upper-casing does, but towards
// lower case: host names are almost always lower case already, so the
// common lookup allocates nothing.
func lowerIfNeeded(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 0x80 {
			return strings.ToLower(s)
		}
	}
	return s
}
