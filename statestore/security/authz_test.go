package security

import (
	"slices"
	"testing"

	"google.golang.org/grpc"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// allMethods lists every RPC the state store serves, from the generated
// service descriptors: a new RPC appears here without anyone listing it.
func allMethods() []string {
	var out []string
	for _, sd := range []grpc.ServiceDesc{pb.StateStore_ServiceDesc, pb.Cluster_ServiceDesc} {
		for _, m := range sd.Methods {
			out = append(out, "/"+sd.ServiceName+"/"+m.MethodName)
		}
		for _, s := range sd.Streams {
			out = append(out, "/"+sd.ServiceName+"/"+s.StreamName)
		}
	}
	return out
}

// TestTableCoversEveryRPC fails when an RPC is added to store.proto without
// an authorization entry (it would be refused to everyone), or an entry
// names an RPC that no longer exists.
func TestTableCoversEveryRPC(t *testing.T) {
	methods := allMethods()
	for _, m := range methods {
		roles, ok := Table[m]
		if !ok {
			t.Errorf("%s has no entry in security.Table", m)
			continue
		}
		if !slices.Contains(roles, RoleReplica) {
			t.Errorf("%s: replicas must be allowed (followers forward every call to the leader)", m)
		}
	}
	for m := range Table {
		if !slices.Contains(methods, m) {
			t.Errorf("security.Table has %s, which the services do not serve", m)
		}
	}
}

// TestAllowedFollowsTable checks every RPC x role against the one table.
func TestAllowedFollowsTable(t *testing.T) {
	for _, m := range allMethods() {
		for _, r := range AllRoles {
			name := "SC-1"
			var req any
			switch m {
			case pb.StateStore_RegisterSubCluster_FullMethodName:
				req = &pb.RegisterSubClusterRequest{Info: &pb.SubClusterInfo{SubClusterId: name}}
			case pb.StateStore_Heartbeat_FullMethodName:
				req = &pb.HeartbeatRequest{SubClusterId: name}
			}
			err := Allowed(Identity{Name: name, Roles: []Role{r}}, m, req)
			if want := slices.Contains(Table[m], r); (err == nil) != want {
				t.Errorf("%s as %s: err %v, want allowed=%v", m, r, err, want)
			}
		}
	}
}

// TestAllowedPolicy pins the decisions the threat model rests on.
func TestAllowedPolicy(t *testing.T) {
	id := func(name string, roles ...Role) Identity { return Identity{Name: name, Roles: roles} }
	cases := []struct {
		name   string
		id     Identity
		method string
		req    any
		ok     bool
	}{
		{"admin formats", id("ops", RoleAdmin), pb.StateStore_Format_FullMethodName, nil, true},
		{"admin joins", id("ops", RoleAdmin), pb.Cluster_Join_FullMethodName, nil, true},
		{"admin cannot read master keys", id("ops", RoleAdmin), pb.StateStore_GetMasterKey_FullMethodName, nil, false},
		{"router reads master keys", id("r1", RoleRouter), pb.StateStore_GetMasterKey_FullMethodName, nil, true},
		{"router cannot format", id("r1", RoleRouter), pb.StateStore_Format_FullMethodName, nil, false},
		{"router cannot join", id("r1", RoleRouter), pb.Cluster_Join_FullMethodName, nil, false},
		{"router cannot remove", id("r1", RoleRouter), pb.Cluster_Remove_FullMethodName, nil, false},
		{"gpg sets policies fenced", id("g1", RoleGPG), pb.StateStore_SetPolicies_FullMethodName, nil, true},
		{"gpg cannot format", id("g1", RoleGPG), pb.StateStore_Format_FullMethodName, nil, false},
		{"gpg cannot read master keys", id("g1", RoleGPG), pb.StateStore_GetMasterKey_FullMethodName, nil, false},
		{"amrmproxy cannot add homes", id("p1", RoleAMRMProxy), pb.StateStore_AddApplicationHome_FullMethodName, nil, false},
		{"amrmproxy reads policies", id("p1", RoleAMRMProxy), pb.StateStore_GetPolicy_FullMethodName, nil, true},
		{"agent heartbeats its own sub-cluster", id("SC-1", RoleAgent), pb.StateStore_Heartbeat_FullMethodName, &pb.HeartbeatRequest{SubClusterId: "SC-1"}, true},
		{"agent cannot heartbeat another", id("SC-1", RoleAgent), pb.StateStore_Heartbeat_FullMethodName, &pb.HeartbeatRequest{SubClusterId: "SC-2"}, false},
		{"agent cannot register another", id("SC-1", RoleAgent), pb.StateStore_RegisterSubCluster_FullMethodName, &pb.RegisterSubClusterRequest{Info: &pb.SubClusterInfo{SubClusterId: "SC-2"}}, false},
		{"agent cannot deregister", id("SC-1", RoleAgent), pb.StateStore_DeregisterSubCluster_FullMethodName, nil, false},
		{"agent cannot read homes", id("SC-1", RoleAgent), pb.StateStore_GetApplicationHome_FullMethodName, nil, false},
		{"admin+agent registers any", id("SC-1", RoleAgent, RoleAdmin), pb.StateStore_RegisterSubCluster_FullMethodName, &pb.RegisterSubClusterRequest{Info: &pb.SubClusterInfo{SubClusterId: "SC-9"}}, true},
		{"no role", id("x"), pb.StateStore_ListSubClusters_FullMethodName, nil, false},
		{"unknown method", id("ops", RoleAdmin), "/yarnfed.statestore.v1.StateStore/Nope", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := Allowed(c.id, c.method, c.req); (err == nil) != c.ok {
				t.Fatalf("Allowed = %v, want ok=%v", err, c.ok)
			}
		})
	}
}

// TestUAMRegistryAccess pins who may call the UAM registry, written out
// here rather than derived from Table (a test that reads the table can
// only confirm the table). Rows hold live AMRMTokens: only the AMRMProxy
// writes, it and the router read, the GPG may only delete, admin and
// agents get nothing.
func TestUAMRegistryAccess(t *testing.T) {
	want := map[string][]Role{
		pb.StateStore_PutUAM_FullMethodName:    {RoleReplica, RoleAMRMProxy},
		pb.StateStore_GetUAMs_FullMethodName:   {RoleReplica, RoleAMRMProxy, RoleRouter},
		pb.StateStore_ListUAMs_FullMethodName:  {RoleReplica, RoleAMRMProxy, RoleRouter},
		pb.StateStore_DeleteUAM_FullMethodName: {RoleReplica, RoleAMRMProxy, RoleRouter, RoleGPG},
	}
	for m, allowed := range want {
		for _, r := range AllRoles {
			err := Allowed(Identity{Name: "SC-1", Roles: []Role{r}}, m, nil)
			if ok := slices.Contains(allowed, r); (err == nil) != ok {
				t.Errorf("%s as %s: err %v, want allowed=%v", m, r, err, ok)
			}
		}
	}
	if len(AllRoles) != 6 {
		t.Fatalf("roles %v: decide whether a new role may touch UAM rows and extend this test", AllRoles)
	}
}

// TestRoleMatrix writes out, for every RPC, which roles may call it, by
// hand: a test that reads Table can only confirm Table, so widening a
// right there (agents given the GPG's MarkSubClustersLost, say) must fail
// here. Columns: A admin, R replica, r router, g agent, p amrmproxy,
// G gpg; '-' is refused. Changing a right means changing this line too,
// on purpose.
func TestRoleMatrix(t *testing.T) {
	cols := []Role{RoleAdmin, RoleReplica, RoleRouter, RoleAgent, RoleAMRMProxy, RoleGPG}
	want := map[string]string{
		// membership
		pb.StateStore_RegisterSubCluster_FullMethodName:   "AR-g--",
		pb.StateStore_Heartbeat_FullMethodName:            "AR-g--",
		pb.StateStore_DeregisterSubCluster_FullMethodName: "ARr---",
		pb.StateStore_GetSubCluster_FullMethodName:        "ARrgpG",
		pb.StateStore_ListSubClusters_FullMethodName:      "ARrgpG",
		// application homes
		pb.StateStore_AddApplicationHome_FullMethodName:     "ARr---",
		pb.StateStore_AddApplicationHomes_FullMethodName:    "ARr---",
		pb.StateStore_UpdateApplicationHome_FullMethodName:  "ARr---",
		pb.StateStore_GetApplicationHome_FullMethodName:     "ARr-pG",
		pb.StateStore_DeleteApplicationHome_FullMethodName:  "ARr---",
		pb.StateStore_ListApplicationHomes_FullMethodName:   "ARr-pG",
		pb.StateStore_DeleteApplicationHomes_FullMethodName: "AR---G",
		// policies
		pb.StateStore_GetPolicy_FullMethodName:      "ARr-pG",
		pb.StateStore_ListPolicies_FullMethodName:   "ARr-pG",
		pb.StateStore_SetPolicy_FullMethodName:      "ARr---",
		pb.StateStore_DeletePolicies_FullMethodName: "ARr---",
		pb.StateStore_SetPolicies_FullMethodName:    "AR---G",
		// GPG lease and fenced writes
		pb.StateStore_AcquireLease_FullMethodName:        "AR---G",
		pb.StateStore_ReleaseLease_FullMethodName:        "AR---G",
		pb.StateStore_GetLease_FullMethodName:            "ARr-pG",
		pb.StateStore_PublishCapacity_FullMethodName:     "AR---G",
		pb.StateStore_MarkSubClustersLost_FullMethodName: "AR---G",
		// reservations
		pb.StateStore_AddReservationHome_FullMethodName:    "ARr---",
		pb.StateStore_UpdateReservationHome_FullMethodName: "ARr---",
		pb.StateStore_GetReservationHome_FullMethodName:    "ARr-pG",
		pb.StateStore_ListReservationHomes_FullMethodName:  "ARr-pG",
		pb.StateStore_DeleteReservationHome_FullMethodName: "ARr---",
		// delegation tokens: routers only, not even admin
		pb.StateStore_StoreMasterKey_FullMethodName:  "-Rr---",
		pb.StateStore_RemoveMasterKey_FullMethodName: "-Rr---",
		pb.StateStore_GetMasterKey_FullMethodName:    "-Rr---",
		pb.StateStore_StoreToken_FullMethodName:      "-Rr---",
		pb.StateStore_UpdateToken_FullMethodName:     "-Rr---",
		pb.StateStore_RemoveToken_FullMethodName:     "-Rr---",
		pb.StateStore_GetToken_FullMethodName:        "-Rr---",
		pb.StateStore_ReserveRange_FullMethodName:    "-Rr---",
		pb.StateStore_GetCounter_FullMethodName:      "-Rr---",
		pb.StateStore_SetCounter_FullMethodName:      "-Rr---",
		// UAM registry
		pb.StateStore_PutUAM_FullMethodName:    "-R--p-",
		pb.StateStore_GetUAMs_FullMethodName:   "-Rr-p-",
		pb.StateStore_ListUAMs_FullMethodName:  "-Rr-p-",
		pb.StateStore_DeleteUAM_FullMethodName: "-Rr-pG",
		// version, format, watch
		pb.StateStore_GetVersion_FullMethodName: "ARrgpG",
		pb.StateStore_Format_FullMethodName:     "AR----",
		pb.StateStore_Watch_FullMethodName:      "ARrgpG",
		// cluster
		pb.Cluster_Join_FullMethodName:     "AR----",
		pb.Cluster_Remove_FullMethodName:   "AR----",
		pb.Cluster_Status_FullMethodName:   "ARrgpG",
		pb.Cluster_Snapshot_FullMethodName: "AR----",
	}
	if !slices.Equal(cols, AllRoles) {
		t.Fatalf("roles %v, matrix columns %v: add the new role's column to every line", AllRoles, cols)
	}
	for _, m := range allMethods() {
		row, ok := want[m]
		if !ok {
			t.Errorf("%s: no line in the matrix; write down who may call it", m)
			continue
		}
		if len(row) != len(cols) {
			t.Fatalf("%s: matrix line %q has %d columns, want %d", m, row, len(row), len(cols))
		}
		for i, r := range cols {
			// The agent's own sub-cluster, so the agent's name check passes
			// and only the table decides.
			var req any
			switch m {
			case pb.StateStore_RegisterSubCluster_FullMethodName:
				req = &pb.RegisterSubClusterRequest{Info: &pb.SubClusterInfo{SubClusterId: "SC-1"}}
			case pb.StateStore_Heartbeat_FullMethodName:
				req = &pb.HeartbeatRequest{SubClusterId: "SC-1"}
			}
			err := Allowed(Identity{Name: "SC-1", Roles: []Role{r}}, m, req)
			if allowed := row[i] != '-'; (err == nil) != allowed {
				t.Errorf("%s as %s: err %v, want allowed=%v (matrix %q)", m, r, err, allowed, row)
			}
		}
	}
	if n := len(allMethods()); n != len(want) {
		t.Errorf("the services have %d RPCs, the matrix %d lines: remove the lines of RPCs that are gone", n, len(want))
	}
}
