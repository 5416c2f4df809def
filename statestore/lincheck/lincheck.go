// Package lincheck checks recorded histories of state store operations for
// linearizability with porcupine, the checker etcd's robustness tests use.
//
// Concurrent clients record each operation's invocation and return
// (Recorder); Check then searches for one total order of the operations
// that respects real time and the sequential model below. An operation
// whose outcome the client could not learn (a timeout, a broken connection,
// "outcome unknown") is recorded as pending: it may have taken effect at
// any time after its invocation, or never.
//
// The model covers what the router relies on:
//
//   - application homes: insert-if-absent (answers the home stored after
//     the call), get, update (NotFound if absent), delete (NotFound if
//     absent);
//   - policies per queue: set, get (NotFound if none).
//
// Each application id and each queue is an independent register, so the
// history is checked per key (porcupine's partitions), which keeps the
// search small however long the run.
//
// The package is for tests only: nothing in the server imports it.
package lincheck

import (
	"fmt"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Kind is an operation type.
type Kind uint8

const (
	InsertHome Kind = iota + 1 // AddApplicationHome: insert if absent
	GetHome                    // GetApplicationHome (linearizable read)
	UpdateHome                 // UpdateApplicationHome
	DeleteHome                 // DeleteApplicationHome
	SetPolicy                  // SetPolicy
	GetPolicy                  // GetPolicy (linearizable read)
)

var kindNames = map[Kind]string{InsertHome: "insert", GetHome: "get", UpdateHome: "update", DeleteHome: "delete", SetPolicy: "setPolicy", GetPolicy: "getPolicy"}

func (k Kind) String() string { return kindNames[k] }

// write reports whether the operation can change state.
func (k Kind) write() bool { return k != GetHome && k != GetPolicy }

// Input is what a client asked.
type Input struct {
	Kind Kind
	// Key is the application id (home operations) or the queue (policy
	// operations).
	Key string
	// Value is the home sub-cluster (insert, update) or the policy
	// parameters (set).
	Value string
}

// Output is what the store answered.
type Output struct {
	// Value: the stored home an insert returned, the home or policy a get
	// returned ("" with NotFound).
	Value string
	// NotFound: a get found nothing, an update or delete found no home.
	NotFound bool
	// Unknown: the client cannot tell whether a write took effect.
	Unknown bool
}

// state of one key: its value, "" when absent.
type state = string

// step is the sequential specification: the states a key can be in after
// op, given the state before it and what the store answered (none: the
// answer is impossible from that state).
func step(s state, in Input, out Output) []state {
	if out.Unknown {
		// Applied or not; what it would have answered is unknown.
		applied := apply(s, in)
		if applied == s {
			return []state{s}
		}
		return []state{s, applied}
	}
	switch in.Kind {
	case InsertHome:
		next := apply(s, in)
		if out.NotFound || out.Value != next {
			return nil
		}
		return []state{next}
	case GetHome, GetPolicy:
		if out.NotFound != (s == "") || out.Value != s {
			return nil
		}
		return []state{s}
	case UpdateHome, DeleteHome:
		if out.NotFound != (s == "") {
			return nil
		}
		return []state{apply(s, in)}
	case SetPolicy:
		if out.NotFound {
			return nil
		}
		return []state{in.Value}
	}
	return nil
}

// apply is the effect of a successful (or assumed applied) operation.
func apply(s state, in Input) state {
	switch in.Kind {
	case InsertHome:
		if s == "" {
			return in.Value
		}
		return s
	case UpdateHome:
		if s == "" {
			return s
		}
		return in.Value
	case DeleteHome:
		return ""
	case SetPolicy:
		return in.Value
	}
	return s
}

// partitionKey separates application ids from queue names.
func partitionKey(in Input) string {
	switch in.Kind {
	case SetPolicy, GetPolicy:
		return "policy/" + in.Key
	}
	return "home/" + in.Key
}

// Model is the porcupine model of the store's home and policy operations.
var Model = (&porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := partitionKey(op.Input.(Input))
			byKey[k] = append(byKey[k], op)
		}
		keys := make([]string, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []any { return []any{state("")} },
	Step: func(s, in, out any) []any {
		next := step(s.(state), in.(Input), out.(Output))
		res := make([]any, len(next))
		for i, n := range next {
			res[i] = n
		}
		return res
	},
	Equal: func(a, b any) bool { return a.(state) == b.(state) },
	DescribeOperation: func(in, out any) string {
		i, o := in.(Input), out.(Output)
		var b strings.Builder
		fmt.Fprintf(&b, "%s(%s", i.Kind, i.Key)
		if i.Value != "" {
			fmt.Fprintf(&b, ", %s", i.Value)
		}
		b.WriteString(") -> ")
		switch {
		case o.Unknown:
			b.WriteString("unknown")
		case o.NotFound:
			b.WriteString("not found")
		case o.Value != "":
			b.WriteString(o.Value)
		default:
			b.WriteString("ok")
		}
		return b.String()
	},
	DescribeState: func(s any) string {
		if s.(state) == "" {
			return "(absent)"
		}
		return s.(state)
	},
}).ToModel()
