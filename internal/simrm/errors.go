package simrm

import "fmt"

// Sentinel errors of the simulator core. The IPC edge maps each to the Java
// exception class a Hadoop RM throws (ipc.go); messages are Hadoop's, because
// Java code matches some of them (AMRMClientUtils parses the expected
// responseId out of the InvalidApplicationMasterRequestException message and
// looks for "Application Master is already registered").
var (
	ErrApplicationNotFound     = sentinel("application not found")
	ErrAttemptNotFound         = sentinel("application attempt not found")
	ErrContainerNotFound       = sentinel("container not found")
	ErrInvalidAMRequest        = sentinel("invalid application master request")
	ErrAMNotRegistered         = sentinel("application master not registered")
	ErrInvalidResourceRequest  = sentinel("invalid resource request")
	ErrInvalidContainerRelease = sentinel("invalid container release")
	ErrQueueNotFound           = sentinel("queue not found")
	ErrAccessDenied            = sentinel("access denied")
	ErrInvalidRequest          = sentinel("invalid request") // plain YarnException
	ErrStandby                 = sentinel("resource manager is standby")
	ErrInjected                = sentinel("injected fault")
	ErrUnsupported             = sentinel("operation not supported by simrm")
)

type sentinelError struct{ s string }

func (e *sentinelError) Error() string { return e.s }

func sentinel(s string) error { return &sentinelError{s} }

// rmError carries Hadoop's message text and wraps its sentinel kind.
type rmError struct {
	kind error
	msg  string
}

func (e *rmError) Error() string { return e.msg }
func (e *rmError) Unwrap() error { return e.kind }

func errorf(kind error, format string, args ...any) error {
	return &rmError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// appNotFound is ClientRMService's message for unknown application ids.
func appNotFound(id AppID) error {
	return errorf(ErrApplicationNotFound, "Application with id '%s' doesn't exist in RM. Please check that the job submission was successful.", id)
}
