// Package uam launches unmanaged ApplicationMasters: the proxy's stand-in
// for an application on a secondary sub-cluster (Hadoop
// UnmanagedApplicationManager). The UAM is submitted with the home's
// ApplicationId, so one application has the same id everywhere.
package uam

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// ClientRM is the part of ApplicationClientProtocolPB a launch needs,
// connected as the application's user (the RM hands an unmanaged AM's
// AMRMToken to its owner only). *hadoopipc.Client satisfies it.
type ClientRM interface {
	Call(ctx context.Context, method string, req, resp proto.Message) error
}

// Spec describes the UAM to launch.
type Spec struct {
	App   *yarnpb.ApplicationIdProto
	Queue string
	// Name is the application name (Hadoop uses "UnmanagedAM").
	Name string
	// PollInterval between application reports while waiting for LAUNCHED.
	PollInterval time.Duration
	// Timeout bounds the whole launch.
	Timeout time.Duration
}

// ErrLaunch: the secondary RM did not give the UAM an AMRMToken.
var ErrLaunch = errors.New("unmanaged AM launch failed")

// ErrAlreadyRunning: the application already runs a registered AM on that
// RM, whose token only its holder has.
var ErrAlreadyRunning = errors.New("the application's unmanaged AM is already registered there and its token is not held here")

// amResource is what Hadoop's UAM asks for (it runs nowhere: an unmanaged
// AM holds no container, but the RM validates the request).
func amResource() *yarnpb.ResourceProto {
	return &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}
}

// Launch submits the UAM (a resubmission of the same id is accepted by the
// RM without effect, so retrying a launch is safe) and waits until its
// attempt is LAUNCHED, returning the AMRMToken from the application report.
func Launch(ctx context.Context, rm ClientRM, s Spec) (*commonpb.TokenProto, error) {
	if s.Name == "" {
		s.Name = "UnmanagedAM"
	}
	if s.PollInterval <= 0 {
		s.PollInterval = 20 * time.Millisecond
	}
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	sub := &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId:                           s.App,
		ApplicationName:                         proto.String(s.Name),
		Queue:                                   proto.String(s.Queue),
		AmContainerSpec:                         &yarnpb.ContainerLaunchContextProto{},
		UnmanagedAm:                             proto.Bool(true),
		KeepContainersAcrossApplicationAttempts: proto.Bool(true),
		Resource:                                amResource(),
		Priority:                                &yarnpb.PriorityProto{Priority: proto.Int32(0)},
	}}
	if err := rm.Call(ctx, "submitApplication", sub, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
		return nil, fmt.Errorf("%w: submit: %w", ErrLaunch, err)
	}
	t := time.NewTicker(s.PollInterval)
	defer t.Stop()
	for {
		resp := &yarnpb.GetApplicationReportResponseProto{}
		err := rm.Call(ctx, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: s.App}, resp)
		if err != nil && ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", ErrLaunch, err)
		}
		if err == nil {
			rep := resp.GetApplicationReport()
			switch rep.GetYarnApplicationState() {
			case yarnpb.YarnApplicationStateProto_FINISHED, yarnpb.YarnApplicationStateProto_FAILED, yarnpb.YarnApplicationStateProto_KILLED:
				return nil, fmt.Errorf("%w: application is %s: %s", ErrLaunch, rep.GetYarnApplicationState(), rep.GetDiagnostics())
			}
			if tok := rep.GetAmRmToken(); tok != nil && len(tok.GetIdentifier()) > 0 {
				return tok, nil
			}
			if rep.GetYarnApplicationState() == yarnpb.YarnApplicationStateProto_RUNNING {
				// Registered already (by another proxy or an earlier AM
				// attempt): the RM will not hand out the token again.
				return nil, fmt.Errorf("%w: %w", ErrLaunch, ErrAlreadyRunning)
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: no AMRMToken before the deadline: %w", ErrLaunch, ctx.Err())
		case <-t.C:
		}
	}
}

// Retry runs f up to attempts times with exponential backoff starting at
// base (Hadoop retries UAM registration 3 x 100 ms). It stops early when
// permanent(err) says another try cannot help.
func Retry(ctx context.Context, attempts int, base time.Duration, permanent func(error) bool, f func() error) error {
	var err error
	d := base
	for i := 0; i < attempts; i++ {
		if err = f(); err == nil || (permanent != nil && permanent(err)) {
			return err
		}
		if i == attempts-1 {
			break
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(d):
		}
		d *= 2
	}
	return err
}
