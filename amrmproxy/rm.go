package amrmproxy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// AMRM is one authenticated connection to a ResourceManager's
// ApplicationMasterProtocol, acting as one application attempt. The home
// RM connection of an AM (HomeConnector) and every unmanaged AM's
// connection are AMRMs.
type AMRM interface {
	Register(ctx context.Context, req *yarnpb.RegisterApplicationMasterRequestProto) (*yarnpb.RegisterApplicationMasterResponseProto, error)
	Allocate(ctx context.Context, req *yarnpb.AllocateRequestProto) (*yarnpb.AllocateResponseProto, error)
	Finish(ctx context.Context, req *yarnpb.FinishApplicationMasterRequestProto) (*yarnpb.FinishApplicationMasterResponseProto, error)
}

// Caller is what an AMRM needs of an IPC connection; *hadoopipc.Client
// satisfies it (so will the relayed upstream connection).
type Caller interface {
	Call(ctx context.Context, method string, req, resp proto.Message) error
}

// CallerAMRM adapts a Caller speaking ApplicationMasterProtocolPB to AMRM.
type CallerAMRM struct{ C Caller }

func (a CallerAMRM) Register(ctx context.Context, req *yarnpb.RegisterApplicationMasterRequestProto) (*yarnpb.RegisterApplicationMasterResponseProto, error) {
	resp := &yarnpb.RegisterApplicationMasterResponseProto{}
	return resp, a.C.Call(ctx, "registerApplicationMaster", req, resp)
}

func (a CallerAMRM) Allocate(ctx context.Context, req *yarnpb.AllocateRequestProto) (*yarnpb.AllocateResponseProto, error) {
	resp := &yarnpb.AllocateResponseProto{}
	return resp, a.C.Call(ctx, "allocate", req, resp)
}

func (a CallerAMRM) Finish(ctx context.Context, req *yarnpb.FinishApplicationMasterRequestProto) (*yarnpb.FinishApplicationMasterResponseProto, error) {
	resp := &yarnpb.FinishApplicationMasterResponseProto{}
	return resp, a.C.Call(ctx, "finishApplicationMaster", req, resp)
}

// remoteClass returns the Java exception class of an RM's error reply.
func remoteClass(err error) string {
	var re *hadoopipc.RemoteError
	if errors.As(err, &re) {
		return re.Class
	}
	return ""
}

// expectedResponseID extracts N from the RM's "Invalid responseId ...
// expect responseId to be N" reply. Hadoop's own AMRMClientRelayer reads
// the same message (AMRMClientUtils): the RM sends the number nowhere else.
var expectRe = regexp.MustCompile(`expect responseId to be (-?\d+)`)

func expectedResponseID(err error) (int32, bool) {
	var re *hadoopipc.RemoteError
	if !errors.As(err, &re) || re.Class != hadoopipc.ClassInvalidApplicationMasterRequest {
		return 0, false
	}
	m := expectRe.FindStringSubmatch(re.Message)
	if m == nil {
		return 0, false
	}
	n, err2 := strconv.ParseInt(m[1], 10, 32)
	if err2 != nil {
		return 0, false
	}
	return int32(n), true
}

// errRMForgotRegistration: an RM lost the attempt's registration (RM
// restart); the relayer registered again, and the AM must re-send its state.
var errRMForgotRegistration = errors.New("RM forgot the registration")

// probeResponseID is sent on the first allocate after the proxy lost track
// of an RM's responseId (restart): it is neither the RM's last id nor the
// one before it, so the RM rejects it without acting and names the id it
// expects. Whether the RM's last answer is then fetched again is the
// relayer's recover flag (see replayLost).
const probeResponseID int32 = -2

// relayer keeps the proxy's own responseId sequence with one RM for one
// attempt (home or UAM), separate from the sequence the proxy keeps with
// the AM, and resynchronises when the RM says it expects another id.
type relayer struct {
	rm AMRM

	mu         sync.Mutex
	responseID int32
	register   *yarnpb.RegisterApplicationMasterRequestProto
	// recover: the sequence was lost with the proxy (a restart), and with
	// it possibly the RM's last answer, which the RM counts as delivered
	// (its containers acquired, its NM tokens sent: it never sends a node's
	// token to the attempt again). Once the RM names the id it expects,
	// that answer is fetched again (see allocate).
	recover bool
}

func newRelayer(rm AMRM, known bool) *relayer {
	r := &relayer{rm: rm}
	if !known {
		r.responseID = probeResponseID
	}
	return r
}

// replayLost marks a relayer whose sequence was lost with a proxy restart:
// the first allocate fetches the RM's last answer again (allocate's
// replayed result) before sending its request. Only for an attempt that
// itself made the calls before the restart: after a re-register the RM's
// last answer is an older attempt's (the RM keeps its content and only sets
// its id to 0), which allocate never replays.
func (r *relayer) replayLost() {
	r.mu.Lock()
	r.recover = true
	r.mu.Unlock()
}

// registered starts the sequence again after a successful register.
func (r *relayer) registered() {
	r.mu.Lock()
	r.responseID, r.recover = 0, false
	r.mu.Unlock()
}

// previousResponseID is the id whose successor is n: an allocate carrying
// it gets the RM's last answer back unchanged.
func previousResponseID(n int32) int32 {
	if n == 0 {
		return math.MaxInt32
	}
	return n - 1
}

// allocate sends req (its response_id is overwritten) and returns the RM's
// answer. Calls are serialised: the RM's responseId rules admit one
// outstanding heartbeat per attempt.
//
// replayed is not nil when the relayer was recovering (replayLost) and the
// RM's last answer was fetched again: an allocate with the id before the
// one the RM expects gets that answer back without the RM acting on the
// request. It is returned even when err is not nil (the request itself
// failed afterwards); the caller merges it like any answer, dropping what
// was already delivered. Hadoop's RM keeps the content of its last answer
// across a re-register (only its id becomes 0), so an expected id of 0
// (nothing allocated since this registration) replays nothing.
func (r *relayer) allocate(ctx context.Context, req *yarnpb.AllocateRequestProto) (resp, replayed *yarnpb.AllocateResponseProto, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for try := 0; ; try++ {
		req.ResponseId = proto.Int32(r.responseID)
		resp, err := r.rm.Allocate(ctx, req)
		if err == nil {
			r.responseID, r.recover = resp.GetResponseId(), false
			return resp, replayed, nil
		}
		if try >= 2 {
			return nil, replayed, err
		}
		if n, ok := expectedResponseID(err); ok {
			if r.recover && n != 0 {
				last, rerr := r.rm.Allocate(ctx, &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(previousResponseID(n)), Progress: req.Progress})
				if rerr != nil {
					// Still recovering, still probing: the next call fetches
					// it again (sending n would skip it for good).
					return nil, nil, rerr
				}
				replayed = last
			}
			r.responseID, r.recover = n, false
			continue
		}
		if remoteClass(err) == hadoopipc.ClassApplicationMasterNotRegistered && r.register != nil {
			// The RM restarted (work-preserving) and forgot the
			// registration, and with it the outstanding asks. Register
			// again, then tell the caller: the AM must re-register and
			// re-send everything, as it would to the RM itself.
			if _, rerr := r.rm.Register(ctx, r.register); rerr != nil && !alreadyRegistered(rerr) {
				return nil, replayed, rerr
			}
			r.responseID, r.recover = 0, false
			return nil, replayed, fmt.Errorf("%w: %w", errRMForgotRegistration, err)
		}
		return nil, replayed, err
	}
}

// resendLast asks the RM for its last answer again (an allocate with the
// id before the one it expects): it changes nothing at the RM but counts as
// a heartbeat for the attempt's liveness. Used while that answer cannot be
// handed on (its NM tokens are not saved yet), so it stays the RM's last
// answer, the one a restarted proxy fetches again.
func (r *relayer) resendLast(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err := r.rm.Allocate(ctx, &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(previousResponseID(r.responseID))})
	return err
}

// setRM swaps the connection (home token roll-over, RM failover to a new
// address) keeping the responseId sequence.
func (r *relayer) setRM(rm AMRM) {
	r.mu.Lock()
	r.rm = rm
	r.mu.Unlock()
}

func (r *relayer) setRegister(req *yarnpb.RegisterApplicationMasterRequestProto) {
	r.mu.Lock()
	r.register = req
	r.mu.Unlock()
}
