package amrmproxy

import (
	"errors"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
)

// Sentinel errors, translated to Hadoop exception classes only at the IPC
// edge (toRemote).
var (
	// ErrSubClusterUnavailable: the sub-cluster is unknown, not RUNNING,
	// timed out or its breaker is open.
	ErrSubClusterUnavailable = errors.New("sub-cluster unavailable")
	// ErrNotRegistered: allocate or finish before register (or after a
	// proxy restart, until the AM registers again).
	ErrNotRegistered = errors.New("application master not registered")
	// ErrInvalidRequest: a request the RM would reject
	// (InvalidApplicationMasterRequestException).
	ErrInvalidRequest = errors.New("invalid application master request")
)

// toRemote gives an error the Java class an AM expects. Errors that
// already are RM replies pass through unchanged.
func toRemote(err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, ErrNotRegistered):
		return hadoopipc.Errorf(hadoopipc.ClassApplicationMasterNotRegistered, "%v", err)
	case errors.Is(err, ErrInvalidRequest):
		return hadoopipc.Errorf(hadoopipc.ClassInvalidApplicationMasterRequest, "%v", err)
	}
	var re *hadoopipc.RemoteError
	if errors.As(err, &re) {
		if re.Fatal {
			// The RM refused the proxy's connection (e.g. a login): an
			// application error for the AM, same class and message.
			return hadoopipc.Errorf(re.Class, "%s", re.Message)
		}
		return re
	}
	if errors.Is(err, ErrSubClusterUnavailable) || rmDown(err) {
		// The home RM did not serve the call (unreachable, timed out):
		// "come back later". AMRMClient's retry policy retries this class,
		// as it retries a connection failure to the RM itself.
		return hadoopipc.Errorf(hadoopipc.ClassRetriable, "%v", err)
	}
	return hadoopipc.Errorf(hadoopipc.ClassYarnException, "%v", err)
}
