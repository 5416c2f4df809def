package kuberm

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopcreds"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// amLaunchContext is what the AM container of attempt at is launched with,
// as an RM's AMLauncher prepares it: the submission's AM launch context with
// the attempt's AMRMToken added to its credentials, so the AM finds it in
// container_tokens (HADOOP_TOKEN_FILE_LOCATION) and can log in to the
// scheduler port. The alias is the token's service, empty here, as
// AMLauncher adds it; AMRMClient sets the service from its configuration.
func (r *RM) amLaunchContext(sc *yarnpb.ApplicationSubmissionContextProto, at yarnid.AttemptID) (*yarnpb.ContainerLaunchContextProto, error) {
	clc := proto.Clone(sc.GetAmContainerSpec()).(*yarnpb.ContainerLaunchContextProto)
	if clc == nil {
		clc = &yarnpb.ContainerLaunchContextProto{}
	}
	creds, err := hadoopcreds.Decode(clc.GetTokens())
	if err != nil {
		// checkSubmission refuses these at submit; a stored one that does
		// not decode was edited behind our back.
		return nil, fmt.Errorf("%w: AM launch context tokens of %s: %w", ErrBadRecord, at.App, err)
	}
	tok := r.AMRMToken(at)
	tok.Service = proto.String("")
	creds.AddToken("", tok)
	clc.Tokens = creds.Encode()
	return clc, nil
}
