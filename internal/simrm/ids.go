package simrm

import "github.com/yarnfed/yarnfed/internal/yarnid"

// Hadoop's record ids live in internal/yarnid (kuberm hands them out too);
// simrm names them as it always has.
type (
	AppID       = yarnid.AppID
	AttemptID   = yarnid.AttemptID
	ContainerID = yarnid.ContainerID
)

// ErrBadID reports an id string that is not in Hadoop's format.
var ErrBadID = yarnid.ErrBadID

var (
	ParseAppID       = yarnid.ParseAppID
	ParseAttemptID   = yarnid.ParseAttemptID
	ParseContainerID = yarnid.ParseContainerID
	NewContainerID   = yarnid.NewContainerID
)

func pad(v int64, width int) string { return yarnid.Pad(v, width) }
