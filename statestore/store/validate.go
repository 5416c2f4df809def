package store

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// Limits bound what a request may carry. They are checked on the server
// before a command is proposed, so bad input never reaches the log.
type Limits struct {
	// MaxContextBytes caps a trimmed application submission context.
	// Hadoop's ZooKeeper store failed at 1 MB; a Raft entry this size is
	// replicated to every node, so keep it well below.
	MaxContextBytes int
	// MaxPolicyParamsBytes caps a policy's serialized parameters.
	MaxPolicyParamsBytes int
	// MaxIDBytes caps ids, queue names and addresses.
	MaxIDBytes int
	// MaxTokenBytes caps token identifiers, token info and key bytes.
	MaxTokenBytes int
	// MaxListLimit caps one page of ListApplicationHomes (Hadoop's
	// yarn.federation.state-store.max-applications, default 1000).
	MaxListLimit int
	// MaxCapabilityBytes caps a sub-cluster's capability (an agent sends
	// it with every heartbeat; it is replicated and pushed to every
	// watcher). Zero: the default.
	MaxCapabilityBytes int
}

// DefaultLimits returns the limits used when a Config leaves them zero.
func DefaultLimits() Limits {
	return Limits{
		MaxContextBytes:      256 << 10,
		MaxPolicyParamsBytes: 64 << 10,
		MaxIDBytes:           512,
		MaxTokenBytes:        64 << 10,
		MaxListLimit:         1000,
		MaxCapabilityBytes:   64 << 10,
	}
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

func (l Limits) id(what, v string) error {
	switch {
	case v == "":
		return invalid("%s is empty", what)
	case len(v) > l.MaxIDBytes:
		return invalid("%s is %d bytes, limit %d", what, len(v), l.MaxIDBytes)
	case !utf8.ValidString(v):
		return invalid("%s is not valid UTF-8", what)
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return invalid("%s contains a control character", what)
		}
	}
	return nil
}

func validState(s pb.SubClusterState) error {
	if s < pb.SubClusterState_SC_NEW || s > pb.SubClusterState_SC_DECOMMISSIONED {
		return invalid("unknown sub-cluster state %d", int32(s))
	}
	return nil
}

func (l Limits) address(what, v string) error {
	if v == "" {
		return invalid("%s is empty", what)
	}
	if len(v) > l.MaxIDBytes {
		return invalid("%s is %d bytes, limit %d", what, len(v), l.MaxIDBytes)
	}
	if _, _, err := net.SplitHostPort(v); err != nil {
		return invalid("%s %q is not host:port", what, v)
	}
	return nil
}

func (l Limits) capability(v string) error {
	max := l.MaxCapabilityBytes
	if max <= 0 {
		max = DefaultLimits().MaxCapabilityBytes
	}
	if len(v) > max {
		return invalid("capability is %d bytes, limit %d", len(v), max)
	}
	if v != "" && !json.Valid([]byte(v)) {
		return invalid("capability is not valid JSON")
	}
	return nil
}

// ValidateSubClusterInfo checks a registration (Hadoop requires the four RM
// addresses as host:port and a known state).
func (l Limits) ValidateSubClusterInfo(in *pb.SubClusterInfo) error {
	if in == nil {
		return invalid("sub-cluster info is missing")
	}
	if err := l.id("sub-cluster id", in.GetSubClusterId()); err != nil {
		return err
	}
	for _, a := range []struct{ what, v string }{
		{"AMRM service address", in.GetAmrmServiceAddress()},
		{"client RM service address", in.GetClientRmServiceAddress()},
		{"RM admin service address", in.GetRmAdminServiceAddress()},
		{"RM web service address", in.GetRmWebServiceAddress()},
	} {
		if err := l.address(a.what, a.v); err != nil {
			return err
		}
	}
	if err := validState(in.GetState()); err != nil {
		return err
	}
	return l.capability(in.GetCapability())
}

// ValidateHeartbeat checks a heartbeat.
func (l Limits) ValidateHeartbeat(in *pb.HeartbeatRequest) error {
	if err := l.id("sub-cluster id", in.GetSubClusterId()); err != nil {
		return err
	}
	if err := validState(in.GetState()); err != nil {
		return err
	}
	return l.capability(in.GetCapability())
}

// ValidateDeregister checks a deregistration.
func (l Limits) ValidateDeregister(in *pb.DeregisterSubClusterRequest) error {
	if err := l.id("sub-cluster id", in.GetSubClusterId()); err != nil {
		return err
	}
	return validState(in.GetState())
}

// ValidateApplicationHome checks an application home for add or update.
func (l Limits) ValidateApplicationHome(in *pb.ApplicationHome) error {
	if in == nil {
		return invalid("application home is missing")
	}
	if err := l.id("application id", in.GetApplicationId()); err != nil {
		return err
	}
	if err := l.id("home sub-cluster id", in.GetHomeSubClusterId()); err != nil {
		return err
	}
	if n := len(in.GetSubmissionContext()); n > l.MaxContextBytes {
		return invalid("submission context is %d bytes, limit %d", n, l.MaxContextBytes)
	}
	return nil
}

// ValidatePolicy checks a policy configuration. Params must be empty or a
// JSON document (every Hadoop policy manager serializes WeightedPolicyInfo
// as UTF-8 JSON), so a truncated or binary blob is refused here rather
// than breaking every router that reads it.
func (l Limits) ValidatePolicy(in *pb.PolicyConfiguration) error {
	if in == nil {
		return invalid("policy configuration is missing")
	}
	if err := l.id("queue", in.GetQueue()); err != nil {
		return err
	}
	if err := l.id("policy type", in.GetType()); err != nil {
		return err
	}
	p := in.GetParams()
	if len(p) > l.MaxPolicyParamsBytes {
		return invalid("policy params are %d bytes, limit %d", len(p), l.MaxPolicyParamsBytes)
	}
	if len(p) > 0 && !json.Valid(p) {
		return invalid("policy params for queue %q are not valid JSON", in.GetQueue())
	}
	return nil
}

// ValidateDeletePolicies checks a policy deletion.
func (l Limits) ValidateDeletePolicies(in *pb.DeletePoliciesRequest) error {
	if in.GetAll() {
		if len(in.GetQueues()) > 0 {
			return invalid("delete all with a queue list")
		}
		return nil
	}
	if len(in.GetQueues()) == 0 {
		return invalid("no queues to delete")
	}
	for _, q := range in.GetQueues() {
		if err := l.id("queue", q); err != nil {
			return err
		}
	}
	return nil
}

// ValidateReservationHome checks a reservation home.
func (l Limits) ValidateReservationHome(in *pb.ReservationHome) error {
	if in == nil {
		return invalid("reservation home is missing")
	}
	if err := l.id("reservation id", in.GetReservationId()); err != nil {
		return err
	}
	return l.id("home sub-cluster id", in.GetHomeSubClusterId())
}

// ValidateMasterKey checks a master key.
func (l Limits) ValidateMasterKey(in *pb.MasterKey) error {
	if in == nil {
		return invalid("master key is missing")
	}
	if len(in.GetKeyBytes()) == 0 {
		return invalid("master key %d has no key bytes", in.GetKeyId())
	}
	if len(in.GetKeyBytes()) > l.MaxTokenBytes {
		return invalid("master key is %d bytes, limit %d", len(in.GetKeyBytes()), l.MaxTokenBytes)
	}
	return nil
}

// ValidateToken checks a delegation token.
func (l Limits) ValidateToken(in *pb.DelegationToken) error {
	if in == nil {
		return invalid("token is missing")
	}
	return l.tokenID(in.GetIdentifier(), len(in.GetTokenInfo()))
}

func (l Limits) tokenID(id []byte, infoLen int) error {
	if len(id) == 0 {
		return invalid("token identifier is empty")
	}
	// The identifier is a database key; bbolt refuses keys over 32 KiB,
	// and a key Apply cannot write would stop every replica.
	if len(id) > MaxTokenIDBytes {
		return invalid("token identifier is %d bytes, limit %d", len(id), MaxTokenIDBytes)
	}
	if infoLen > l.MaxTokenBytes {
		return invalid("token info is %d bytes, limit %d", infoLen, l.MaxTokenBytes)
	}
	return nil
}

// MaxTokenIDBytes caps a delegation-token identifier (a database key).
const MaxTokenIDBytes = 4096

// ValidateCounter checks a counter name.
func ValidateCounter(c pb.Counter) error {
	if c != pb.Counter_COUNTER_TOKEN_SEQUENCE && c != pb.Counter_COUNTER_MASTER_KEY_ID {
		return invalid("unknown counter %d", int32(c))
	}
	return nil
}

// MaxReserve caps one ReserveRange call.
const MaxReserve = 1 << 20

// ValidateReserveRange checks a range reservation.
func ValidateReserveRange(in *pb.ReserveRangeRequest) error {
	if err := ValidateCounter(in.GetCounter()); err != nil {
		return err
	}
	if in.GetCount() < 1 || in.GetCount() > MaxReserve {
		return invalid("reserve count %d outside 1..%d", in.GetCount(), MaxReserve)
	}
	return nil
}

// ValidateSetCounter checks a counter assignment.
func ValidateSetCounter(in *pb.SetCounterRequest) error {
	if err := ValidateCounter(in.GetCounter()); err != nil {
		return err
	}
	if in.GetValue() < 0 {
		return invalid("counter value %d is negative", in.GetValue())
	}
	return nil
}

// MaxBatchItems caps the items of one SetPolicies, PublishCapacity,
// MarkSubClustersLost or DeleteApplicationHomes request.
const MaxBatchItems = 10_000

// MaxLeaseTTL caps a lease's time to live: a holder that dies keeps the
// lease at most this long.
const MaxLeaseTTL = 10 * 60 * 1000

func (l Limits) fence(f *pb.Fence) error {
	if f == nil || (f.GetLease() == "" && f.GetHolder() == "" && f.GetEpoch() == 0) {
		return nil
	}
	if err := l.id("fence lease", f.GetLease()); err != nil {
		return err
	}
	if err := l.id("fence holder", f.GetHolder()); err != nil {
		return err
	}
	if f.GetEpoch() == 0 {
		return invalid("fence epoch is 0 (epochs start at 1)")
	}
	return nil
}

func batchSize(what string, n int) error {
	if n == 0 {
		return invalid("no %s", what)
	}
	if n > MaxBatchItems {
		return invalid("%d %s, limit %d", n, what, MaxBatchItems)
	}
	return nil
}

// ValidateLease checks an acquire.
func (l Limits) ValidateLease(in *pb.AcquireLeaseRequest) error {
	if err := l.id("lease name", in.GetName()); err != nil {
		return err
	}
	if err := l.id("lease holder", in.GetHolder()); err != nil {
		return err
	}
	if in.GetTtlMs() < 1 || in.GetTtlMs() > MaxLeaseTTL {
		return invalid("lease ttl %d ms outside 1..%d", in.GetTtlMs(), MaxLeaseTTL)
	}
	return nil
}

// ValidateReleaseLease checks a release.
func (l Limits) ValidateReleaseLease(in *pb.ReleaseLeaseRequest) error {
	if err := l.id("lease name", in.GetName()); err != nil {
		return err
	}
	return l.id("lease holder", in.GetHolder())
}

// ValidateSetPolicies checks a batch of policies: each as SetPolicy, no
// queue twice.
func (l Limits) ValidateSetPolicies(in *pb.SetPoliciesRequest) error {
	if err := batchSize("policies or capacities", len(in.GetPolicies())+len(in.GetCapacities())); err != nil {
		return err
	}
	if err := l.capacityItems(in.GetCapacities()); err != nil {
		return err
	}
	seen := make(map[string]bool, len(in.GetPolicies()))
	for _, p := range in.GetPolicies() {
		if err := l.ValidatePolicy(p); err != nil {
			return err
		}
		if seen[p.GetQueue()] {
			return invalid("queue %q appears twice", p.GetQueue())
		}
		seen[p.GetQueue()] = true
	}
	return l.fence(in.GetFence())
}

// ValidatePublishCapacity checks published capacities: known shape,
// nothing negative.
func (l Limits) ValidatePublishCapacity(in *pb.PublishCapacityRequest) error {
	if err := batchSize("capacity items", len(in.GetItems())); err != nil {
		return err
	}
	if err := l.capacityItems(in.GetItems()); err != nil {
		return err
	}
	return l.fence(in.GetFence())
}

func (l Limits) capacityItems(items []*pb.PublishCapacityRequest_Item) error {
	seen := make(map[string]bool, len(items))
	for _, it := range items {
		if err := l.id("sub-cluster id", it.GetSubClusterId()); err != nil {
			return err
		}
		if it.GetMemoryMb() < 0 || it.GetVcores() < 0 || it.GetNodes() < 0 || it.GetObservedMs() < 0 {
			return invalid("capacity of %s has a negative figure", it.GetSubClusterId())
		}
		if seen[it.GetSubClusterId()] {
			return invalid("capacity of %s appears twice", it.GetSubClusterId())
		}
		seen[it.GetSubClusterId()] = true
	}
	return nil
}

// ValidateMarkLost checks a liveness update.
func (l Limits) ValidateMarkLost(in *pb.MarkSubClustersLostRequest) error {
	if err := batchSize("sub-cluster ids", len(in.GetSubClusterIds())); err != nil {
		return err
	}
	for _, id := range in.GetSubClusterIds() {
		if err := l.id("sub-cluster id", id); err != nil {
			return err
		}
	}
	if in.GetHeartbeatBeforeMs() <= 0 {
		return invalid("heartbeat_before_ms must be > 0")
	}
	return l.fence(in.GetFence())
}

// ValidateDeleteApplicationHomes checks a cleaner batch.
func (l Limits) ValidateDeleteApplicationHomes(in *pb.DeleteApplicationHomesRequest) error {
	if err := batchSize("application ids", len(in.GetApplicationIds())); err != nil {
		return err
	}
	for _, id := range in.GetApplicationIds() {
		if err := l.id("application id", id); err != nil {
			return err
		}
	}
	if in.GetCreatedBeforeMs() <= 0 {
		return invalid("created_before_ms must be > 0")
	}
	return l.fence(in.GetFence())
}

// MaxUAMTokenBytes caps a UAM's serialized AMRMToken (a TokenProto). A real
// one is about 150 bytes (an attempt id and key id, a 20-byte password, the
// kind and the RM's address); the cap only keeps a caller from parking
// megabytes in a row every replica holds.
const MaxUAMTokenBytes = 64 << 10

// optional checks a free-form string that may be empty: bounded, UTF-8, no
// control characters.
func (l Limits) optional(what, v string) error {
	if v == "" {
		return nil
	}
	return l.id(what, v)
}

// maxTimestampDigits and maxSeqDigits bound each number of a YARN id: a cluster timestamp is an
// int64 (19 digits), sequences and attempts are int32 (10).
const maxTimestampDigits, maxSeqDigits = 19, 10

// digits parses a non-empty run of at most max ASCII digits.
func digits(s string, max int) (int64, bool) {
	if s == "" || len(s) > max {
		return 0, false
	}
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
		if n < 0 {
			return 0, false
		}
	}
	return n, true
}

// yarnAppID is an application id's two numbers.
type yarnAppID struct{ ts, seq int64 }

// parseYARNAppID parses application_<clusterTimestamp>_<sequence>, the form
// every RM hands out (ApplicationId.toString).
func parseYARNAppID(v string) (yarnAppID, bool) {
	rest, ok := strings.CutPrefix(v, "application_")
	if !ok {
		return yarnAppID{}, false
	}
	ts, seq, ok := strings.Cut(rest, "_")
	if !ok {
		return yarnAppID{}, false
	}
	t, ok1 := digits(ts, maxTimestampDigits)
	s, ok2 := digits(seq, maxSeqDigits)
	return yarnAppID{t, s}, ok1 && ok2
}

// attemptOf checks that v is appattempt_<clusterTimestamp>_<sequence>_<attempt>
// of application app.
func attemptOf(what, v string, app yarnAppID) error {
	rest, ok := strings.CutPrefix(v, "appattempt_")
	parts := strings.Split(rest, "_")
	if !ok || len(parts) != 3 {
		return invalid("%s %q is not appattempt_<clusterTimestamp>_<sequence>_<attempt>", what, v)
	}
	t, ok1 := digits(parts[0], maxTimestampDigits)
	s, ok2 := digits(parts[1], maxSeqDigits)
	_, ok3 := digits(parts[2], maxSeqDigits)
	if !ok1 || !ok2 || !ok3 {
		return invalid("%s %q is not appattempt_<clusterTimestamp>_<sequence>_<attempt>", what, v)
	}
	if (yarnAppID{t, s}) != app {
		return invalid("%s %q is not an attempt of the record's application", what, v)
	}
	return nil
}

// uamAppID checks an application id of the UAM registry: a real YARN id
// (the UAM runs under the home application's own id on the secondary).
func (l Limits) uamAppID(v string) (yarnAppID, error) {
	if err := l.id("application id", v); err != nil {
		return yarnAppID{}, err
	}
	app, ok := parseYARNAppID(v)
	if !ok {
		return yarnAppID{}, invalid("application id %q is not application_<clusterTimestamp>_<sequence>", v)
	}
	return app, nil
}

// ValidateUAM checks a UAM registry row for PutUAM: well-formed ids, the
// attempts belonging to the application, a secondary that is not the home,
// an AMRMToken that is a TokenProto (or empty: not handed out yet) and
// bounded, and every other string bounded. The times are the store's to
// stamp and are ignored.
func (l Limits) ValidateUAM(in *pb.UAMRecord) error {
	if in == nil {
		return invalid("UAM record is missing")
	}
	app, err := l.uamAppID(in.GetApplicationId())
	if err != nil {
		return err
	}
	if err := l.id("sub-cluster id", in.GetSubClusterId()); err != nil {
		return err
	}
	if err := l.id("home sub-cluster id", in.GetHomeSubClusterId()); err != nil {
		return err
	}
	if in.GetSubClusterId() == in.GetHomeSubClusterId() {
		return invalid("UAM of %s is on its home sub-cluster %s (UAMs run on secondaries only)", in.GetApplicationId(), in.GetSubClusterId())
	}
	if v := in.GetUamAttemptId(); v != "" {
		if err := attemptOf("UAM attempt id", v, app); err != nil {
			return err
		}
	}
	if v := in.GetAmAttemptId(); v != "" {
		if err := attemptOf("AM attempt id", v, app); err != nil {
			return err
		}
	}
	for _, f := range []struct{ what, v string }{{"proxy", in.GetProxy()}, {"user", in.GetUser()}, {"queue", in.GetQueue()}} {
		if err := l.optional(f.what, f.v); err != nil {
			return err
		}
	}
	if tok := in.GetAmrmToken(); len(tok) > 0 {
		if len(tok) > MaxUAMTokenBytes {
			return invalid("AMRMToken is %d bytes, limit %d", len(tok), MaxUAMTokenBytes)
		}
		// Required fields are checked: a truncated token is refused here
		// rather than failing every reader.
		if err := proto.Unmarshal(tok, &commonpb.TokenProto{}); err != nil {
			return invalid("AMRMToken is not a serialized TokenProto: %v", err)
		}
	}
	return validateUAMNMTokens(in.GetNmTokens())
}

// validateUAMNMTokens checks a UAM row's NM tokens: at most
// pb.MaxUAMNMTokens, each at most pb.MaxUAMNMTokenBytes, each an
// NMTokenProto naming a node (host and port) and holding a TokenProto with
// its required fields, one per node.
func validateUAMNMTokens(toks [][]byte) error {
	if len(toks) > pb.MaxUAMNMTokens {
		return invalid("%d NM tokens, limit %d", len(toks), pb.MaxUAMNMTokens)
	}
	nodes := make(map[string]bool, len(toks))
	for i, b := range toks {
		if len(b) > pb.MaxUAMNMTokenBytes {
			return invalid("NM token %d is %d bytes, limit %d", i, len(b), pb.MaxUAMNMTokenBytes)
		}
		t := &yarnpb.NMTokenProto{}
		if err := proto.Unmarshal(b, t); err != nil {
			return invalid("NM token %d is not a serialized NMTokenProto: %v", i, err)
		}
		if t.GetNodeId().GetHost() == "" || t.GetNodeId().Port == nil || t.GetToken() == nil {
			return invalid("NM token %d names no node or holds no token", i)
		}
		node := net.JoinHostPort(t.GetNodeId().GetHost(), fmt.Sprint(t.GetNodeId().GetPort()))
		if nodes[node] {
			return invalid("two NM tokens for node %s", node)
		}
		nodes[node] = true
	}
	return nil
}

// ValidateGetUAMs checks GetUAMs' application id.
func (l Limits) ValidateGetUAMs(appID string) error {
	_, err := l.uamAppID(appID)
	return err
}

// ValidateListUAMs checks a ListUAMs filter and limit.
func (l Limits) ValidateListUAMs(in *pb.ListUAMsRequest) error {
	if in.GetLimit() < 0 {
		return invalid("negative limit %d", in.GetLimit())
	}
	return l.optional("sub-cluster id", in.GetSubClusterId())
}

// ValidateDeleteUAM checks a DeleteUAM (an empty sub-cluster deletes every
// row of the application).
func (l Limits) ValidateDeleteUAM(in *pb.DeleteUAMRequest) error {
	if _, err := l.uamAppID(in.GetApplicationId()); err != nil {
		return err
	}
	return l.optional("sub-cluster id", in.GetSubClusterId())
}
