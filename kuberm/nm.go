package kuberm

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
	"github.com/yarnfed/yarnfed/kuberm/record"
)

// The NodeManager face (DESIGN.md, "NM face"): ContainerManagementProtocol
// for every node of the cluster on one port. An AM logs in with the NM
// token kuberm issued its attempt for a node (DIGEST-MD5, TOKEN only),
// starts a container by handing over its container token and launch
// context (kuberm writes the context into the container's launch Secret,
// which the waiting pod mounts), stops it (its pod is deleted) and asks
// its status (read from the pod). Rules and messages follow Hadoop 3.4's
// ContainerManagerImpl; where kuberm differs, the code says why.

const (
	// ProtocolContainerManagement is the NM protocol's wire name.
	ProtocolContainerManagement = "org.apache.hadoop.yarn.api.ContainerManagementProtocolPB"
	// maxLaunchContextBytes bounds a launch context (deterministic
	// encoding), as submissions are bounded: it becomes a Secret (at most
	// 1 MiB in the API server) that the kubelet keeps in the node's memory
	// for the pod's life.
	maxLaunchContextBytes = record.MaxSubmissionBytes

	classInvalidAuxService = "org.apache.hadoop.yarn.exceptions.InvalidAuxServiceException"

	// ContainerExitStatus values a NodeManager reports.
	exitKilledPmem     = -104
	msgInvalidNMToken  = "Invalid NMToken"
	msgInvalidCTToken  = "Invalid ContainerToken"
	msgKilledByAM      = "Container killed by the ApplicationMaster."
	refusedAPIError    = "api_error"
	refusedNotHandled  = "not_handled"
	refusedOtherApp    = "other_application"
	refusedOtherNode   = "other_node"
	refusedNotLive     = "attempt_not_live"
	refusedBadToken    = "invalid_container_token"
	refusedExpired     = "expired"
	refusedStarted     = "already_started"
	refusedEnded       = "container_ended"
	refusedTooLarge    = "launch_context_too_large"
	refusedBadContext  = "bad_launch_context"
	refusedAuxService  = "aux_service"
	refusedLoginToken  = "invalid_nm_token"
	refusedLoginPort   = "nm_token_other_port"
	refusedLoginEnded  = "nm_token_attempt_not_live"
	methodLogin        = "login"
	methodStart        = "startContainers"
	methodStop         = "stopContainers"
	methodStatuses     = "getContainerStatuses"
	notHandledByThisNM = "Container %s is not handled by this NodeManager"
)

// refusal is one container's failure in a start, stop or status answer:
// the Java class and message the AM gets in failed_requests, and the
// reason the metrics count.
type refusal struct {
	reason string
	class  string
	msg    string
}

func (f *refusal) Error() string { return f.msg }

func refuse(reason, class, format string, args ...any) *refusal {
	return &refusal{reason: reason, class: class, msg: fmt.Sprintf(format, args...)}
}

func (f *refusal) entry(cid *yarnpb.ContainerIdProto) *yarnpb.ContainerExceptionMapProto {
	return &yarnpb.ContainerExceptionMapProto{ContainerId: cid, Exception: &yarnpb.SerializedExceptionProto{
		ClassName: proto.String(f.class), Message: proto.String(f.msg), Trace: proto.String(f.class + ": " + f.msg)}}
}

func (r *RM) nmProtocol() hadoopipc.Protocol {
	return hadoopipc.Protocol{
		Name:    ProtocolContainerManagement,
		Version: 1,
		Errors:  errorClasses,
		// increaseContainersResource, updateContainer, signalToContainer,
		// localize, reInitializeContainer, restartContainer,
		// rollbackLastReInitialization, commitLastReInitialization and
		// getLocalizationStatuses are not registered: an AM gets
		// RpcNoSuchMethodException, as from a NodeManager of a release
		// without the method (DESIGN.md, "NM face").
		Methods: []hadoopipc.Method{
			hadoopipc.NewMethod(methodStart, hadoopipc.NewOf[yarnpb.StartContainersRequestProto](), r.startContainers),
			hadoopipc.NewMethod(methodStop, hadoopipc.NewOf[yarnpb.StopContainersRequestProto](), r.stopContainers),
			hadoopipc.NewMethod(methodStatuses, hadoopipc.NewOf[yarnpb.GetContainerStatusesRequestProto](), r.getContainerStatuses),
		},
	}
}

// nmSecrets is the NM face's SecretManager: NM tokens kuberm signed, for
// its NM port, of an attempt that is its application's live one. The SASL
// user is the attempt, as a NodeManager names an NM token's caller.
type nmSecrets struct{ r *RM }

func (s nmSecrets) RetrievePassword(identifier []byte) ([]byte, string, error) {
	tid, pw, err := s.r.checkNMToken(identifier)
	if err != nil {
		s.r.metrics.nmRefused.WithLabelValues(methodLogin, refusedLoginToken).Inc()
		return nil, "", err
	}
	at := yarnid.AttemptFromPB(tid.AppAttemptId)
	if tid.NodeId.GetPort() != s.r.nmPort || tid.NodeId.GetHost() == "" {
		s.r.metrics.nmRefused.WithLabelValues(methodLogin, refusedLoginPort).Inc()
		return nil, "", fmt.Errorf("%w: Given NMToken for application : %s is not valid for current node manager.expected : <node>:%d found : %s",
			ErrInvalidToken, at, s.r.nmPort, nodeIDString(tid.NodeId))
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.r.cfg.APITimeout.D())
	defer cancel()
	if _, _, err := s.r.liveAttempt(ctx, at); err != nil {
		if errors.Is(err, ErrKube) {
			return nil, "", hadoopipc.Errorf(hadoopipc.ClassRetriable, "%v", err)
		}
		s.r.metrics.nmRefused.WithLabelValues(methodLogin, refusedLoginEnded).Inc()
		return nil, "", fmt.Errorf("%w: Given NMToken for application : %s is not valid: %s is not the live attempt of %s", ErrInvalidToken, at, at, at.App)
	}
	return pw, at.String(), nil
}

// nmCaller is an authenticated NM-face caller: its NM token's attempt and
// the node that token is for.
type nmCaller struct {
	at   yarnid.AttemptID
	node string // NodeId host:port of the NM token
}

// nmCaller authorizes a call: an NM-token login (the port offers nothing
// else) whose attempt is still its application's live one. Checked on
// every call, not only at login: a connection outlives the attempt it was
// opened by (Java AMs cache them per node).
func (r *RM) nmCaller(ctx context.Context, method string) (nmCaller, error) {
	u, ok := hadoopipc.UserFromContext(ctx)
	if !ok || u.AuthMethod != "TOKEN" || len(u.TokenID) == 0 {
		return nmCaller{}, hadoopipc.Errorf(hadoopipc.ClassYarnException, "%s", msgInvalidNMToken)
	}
	tid, _, err := r.checkNMToken(u.TokenID)
	if err != nil {
		return nmCaller{}, hadoopipc.Errorf(hadoopipc.ClassYarnException, "%s", msgInvalidNMToken)
	}
	c := nmCaller{at: yarnid.AttemptFromPB(tid.AppAttemptId), node: nodeIDString(tid.NodeId)}
	if _, _, err := r.liveAttempt(ctx, c.at); err != nil {
		if errors.Is(err, ErrKube) || errors.Is(err, ErrBadRecord) {
			r.metrics.nmRefused.WithLabelValues(method, refusedAPIError).Inc()
			return nmCaller{}, err
		}
		r.metrics.nmRefused.WithLabelValues(method, refusedNotLive).Inc()
		return nmCaller{}, hadoopipc.Errorf(hadoopipc.ClassInvalidToken,
			"NMToken of %s is no longer valid: it is not the live attempt of %s", c.at, c.at.App)
	}
	return c, nil
}

// nodeIDs caches, for one call, the NodeId of each node name.
type nodeIDs map[string]string

// containerPod finds the pod of one of the caller's containers on the
// caller's node. Anything else is "not handled by this NodeManager", as a
// NodeManager answers for a container it does not run.
func (r *RM) nmContainerPod(ctx context.Context, c nmCaller, cid yarnid.ContainerID, nodes nodeIDs) (*corev1.Pod, *refusal) {
	notHandled := func(why string) *refusal {
		return refuse(refusedNotHandled, hadoopipc.ClassYarnException, notHandledByThisNM+" (%s)", cid, why)
	}
	p, err := r.kube.Pods(r.cfg.Namespace).Get(ctx, r.containerPodName(cid), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, notHandled("kuberm has no pod for it: never allocated, released or killed")
	}
	if err != nil {
		return nil, refuse(refusedAPIError, hadoopipc.ClassIOException, "%v", kubeErr("get container pod", err))
	}
	if p.Labels[LabelSubCluster] != r.cfg.SubClusterID || p.Labels[LabelRole] != RoleContainer ||
		p.Labels[LabelContainerID] != cid.String() || p.Labels[LabelApplication] != cid.Attempt.App.String() {
		return nil, notHandled("the pod of that name is not this container's")
	}
	if p.Spec.NodeName == "" {
		return nil, notHandled("its pod is not bound to a node yet")
	}
	node, ok := nodes[p.Spec.NodeName]
	if !ok {
		n, err := r.kube.Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			node = ""
		case err != nil:
			return nil, refuse(refusedAPIError, hadoopipc.ClassIOException, "%v", kubeErr("get node", err))
		default:
			node = nodeIDString(r.nodeID(n))
		}
		nodes[p.Spec.NodeName] = node
	}
	if node != c.node {
		return nil, refuse(refusedOtherNode, hadoopipc.ClassYarnException, notHandledByThisNM+" (it runs on node %s, this NMToken is for %s)", cid, orNA(node), c.node)
	}
	return p, nil
}

func podEnded(p *corev1.Pod) bool {
	return p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func (r *RM) startContainers(ctx context.Context, req *yarnpb.StartContainersRequestProto) (*yarnpb.StartContainersResponseProto, error) {
	c, err := r.nmCaller(ctx, methodStart)
	if err != nil {
		return nil, err
	}
	// No auxiliary services: services_meta_data stays empty (DESIGN.md, Left 7).
	out := &yarnpb.StartContainersResponseProto{}
	nodes := nodeIDs{}
	for _, sr := range req.GetStartContainerRequest() {
		tid, err := r.startToken(c, sr.GetContainerToken())
		if err != nil {
			// As a NodeManager: a missing or invalid container token fails
			// the whole call (SecretManager$InvalidToken), not one container.
			r.metrics.nmRefused.WithLabelValues(methodStart, refusedBadToken).Inc()
			return nil, err
		}
		if err := r.startOne(ctx, c, tid, sr.GetContainerLaunchContext(), nodes); err != nil {
			r.metrics.nmRefused.WithLabelValues(methodStart, err.reason).Inc()
			out.FailedRequests = append(out.FailedRequests, err.entry(tid.ContainerId))
			continue
		}
		r.metrics.nmStarted.Inc()
		out.SucceededRequests = append(out.SucceededRequests, tid.ContainerId)
	}
	return out, nil
}

// startToken verifies a container token: kuberm's signature, and the node
// it names is the NM token's (a NodeManager checks it is its own).
func (r *RM) startToken(c nmCaller, t *commonpb.TokenProto) (*yarnpb.ContainerTokenIdentifierProto, error) {
	if len(t.GetIdentifier()) == 0 {
		return nil, hadoopipc.Errorf(hadoopipc.ClassYarnException, "%s", msgInvalidCTToken)
	}
	tid, err := r.checkContainerToken(t)
	if err != nil {
		return nil, hadoopipc.Errorf(hadoopipc.ClassInvalidToken, "Invalid container token used for starting container on : %s (%v)", c.node, err)
	}
	if tid.GetNmHostAddr() != c.node {
		return nil, hadoopipc.Errorf(hadoopipc.ClassInvalidToken, "Given Container %s identifier is not valid for current Node manager. Expected : %s Found : %s",
			yarnid.ContainerFromPB(tid.ContainerId), c.node, tid.GetNmHostAddr())
	}
	return tid, nil
}

// startOne checks one verified start request against the caller and the
// container's pod, then creates the launch Secret the pod waits for.
func (r *RM) startOne(ctx context.Context, c nmCaller, tid *yarnpb.ContainerTokenIdentifierProto, clc *yarnpb.ContainerLaunchContextProto, nodes nodeIDs) *refusal {
	cid := yarnid.ContainerFromPB(tid.ContainerId)
	if cid.Attempt.App != c.at.App {
		return refuse(refusedOtherApp, hadoopipc.ClassYarnException, "Unauthorized request to start container.\nNMToken for application attempt : %s was used for starting container with container token issued for application attempt : %s",
			c.at, cid.Attempt)
	}
	if now := r.now().UnixMilli(); tid.GetExpiryTimeStamp() < now {
		return refuse(refusedExpired, hadoopipc.ClassYarnException, "Unauthorized request to start container.\nThis token is expired. current time is %d found %d\nNote: System times on machines may be out of sync. Check system time and time zones.",
			now, tid.GetExpiryTimeStamp())
	}
	raw, f := checkLaunchContext(clc)
	if f != nil {
		return f
	}
	p, f := r.nmContainerPod(ctx, c, cid, nodes)
	if f != nil {
		return f
	}
	if podEnded(p) {
		return refuse(refusedEnded, hadoopipc.ClassYarnException, "Container %s cannot start: its pod %s has ended or is being deleted", cid, p.Name)
	}
	// The Secret is owned by the pod, so it goes with it; immutable, so
	// what the launcher reads is what the AM sent.
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: r.launchSecretName(cid), Namespace: r.cfg.Namespace, Labels: maps.Clone(p.Labels),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID}},
		},
		Type:      corev1.SecretType(LaunchSecretType),
		Immutable: ptr(true),
		Data:      map[string][]byte{DataLaunchContext: raw},
	}
	_, err := r.kube.Secrets(r.cfg.Namespace).Create(ctx, s, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Its launch Secret exists: started already (an NM's relaunch check).
		return refuse(refusedStarted, hadoopipc.ClassYarnException, "Unauthorized request to start container.\n Attempt to relaunch the same container with id %s.", cid)
	}
	if err != nil {
		return refuse(refusedAPIError, hadoopipc.ClassIOException, "%v", kubeErr("create launch secret", err))
	}
	r.log.Info("container started", "container", cid, "pod", p.Name, "node", c.node, "user", tid.GetAppSubmitter())
	return nil
}

// checkLaunchContext is a NodeManager's sanity check of a launch context
// (no auxiliary service named that kuberm does not have, every local
// resource with a URL, type and visibility) plus kuberm's size bound; it
// returns the encoding stored in the launch Secret.
func checkLaunchContext(clc *yarnpb.ContainerLaunchContextProto) ([]byte, *refusal) {
	if clc == nil {
		return nil, refuse(refusedBadContext, hadoopipc.ClassYarnException, "no container launch context")
	}
	if sd := clc.GetServiceData(); len(sd) > 0 {
		return nil, refuse(refusedAuxService, classInvalidAuxService, "The auxService:%s does not exist", sd[0].GetKey())
	}
	for _, lr := range clc.GetLocalResources() {
		v := lr.GetValue()
		switch {
		case v == nil || v.Resource == nil:
			return nil, refuse(refusedBadContext, hadoopipc.ClassYarnException, "Null resource URL for local resource %s", lr.GetKey())
		case v.Type == nil:
			return nil, refuse(refusedBadContext, hadoopipc.ClassYarnException, "Null resource type for local resource %s", lr.GetKey())
		case v.Visibility == nil:
			return nil, refuse(refusedBadContext, hadoopipc.ClassYarnException, "Null resource visibility for local resource %s", lr.GetKey())
		}
	}
	raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(clc)
	if err != nil {
		return nil, refuse(refusedBadContext, hadoopipc.ClassYarnException, "container launch context: %v", err)
	}
	if len(raw) > maxLaunchContextBytes {
		return nil, refuse(refusedTooLarge, hadoopipc.ClassYarnException, "container launch context of %d bytes exceeds kuberm's limit of %d", len(raw), maxLaunchContextBytes)
	}
	return raw, nil
}

func (r *RM) stopContainers(ctx context.Context, req *yarnpb.StopContainersRequestProto) (*yarnpb.StopContainersResponseProto, error) {
	c, err := r.nmCaller(ctx, methodStop)
	if err != nil {
		return nil, err
	}
	out := &yarnpb.StopContainersResponseProto{}
	nodes := nodeIDs{}
	for _, id := range req.GetContainerId() {
		if f := r.stopOne(ctx, c, yarnid.ContainerFromPB(id), nodes); f != nil {
			r.metrics.nmRefused.WithLabelValues(methodStop, f.reason).Inc()
			out.FailedRequests = append(out.FailedRequests, f.entry(id))
			continue
		}
		out.SucceededRequests = append(out.SucceededRequests, id)
	}
	return out, nil
}

// stopOne deletes a container's pod (gracefully: the kubelet sends SIGTERM
// and waits the pod's grace period), first marking it stopped by the AM.
// A pod that ended or is being deleted already is a success, as stopping
// a finished container is on a NodeManager.
func (r *RM) stopOne(ctx context.Context, c nmCaller, cid yarnid.ContainerID, nodes nodeIDs) *refusal {
	if cid.Attempt.App != c.at.App {
		return refuse(refusedOtherApp, hadoopipc.ClassYarnException, "%s attempted to stop non-application container : %s", c.at, cid)
	}
	p, f := r.nmContainerPod(ctx, c, cid, nodes)
	if f != nil {
		return f
	}
	if podEnded(p) {
		return nil
	}
	// allocate's stop: marks the pod, so its end is reported
	// KILLED_BY_APPMASTER, then deletes it gracefully.
	if err := r.stopContainerPod(ctx, p); err != nil {
		return refuse(refusedAPIError, hadoopipc.ClassIOException, "%v", err)
	}
	r.metrics.nmStopped.Inc()
	r.log.Info("container stopped by its AM", "container", cid, "pod", p.Name)
	return nil
}

func (r *RM) getContainerStatuses(ctx context.Context, req *yarnpb.GetContainerStatusesRequestProto) (*yarnpb.GetContainerStatusesResponseProto, error) {
	c, err := r.nmCaller(ctx, methodStatuses)
	if err != nil {
		return nil, err
	}
	out := &yarnpb.GetContainerStatusesResponseProto{}
	nodes := nodeIDs{}
	for _, id := range req.GetContainerId() {
		st, f := r.statusOne(ctx, c, yarnid.ContainerFromPB(id), nodes)
		if f != nil {
			r.metrics.nmRefused.WithLabelValues(methodStatuses, f.reason).Inc()
			out.FailedRequests = append(out.FailedRequests, f.entry(id))
			continue
		}
		out.Status = append(out.Status, st)
	}
	return out, nil
}

func (r *RM) statusOne(ctx context.Context, c nmCaller, cid yarnid.ContainerID, nodes nodeIDs) (*yarnpb.ContainerStatusProto, *refusal) {
	if cid.Attempt.App != c.at.App {
		return nil, refuse(refusedOtherApp, hadoopipc.ClassYarnException, "%s attempted to get status for non-application container : %s", c.at, cid)
	}
	p, f := r.nmContainerPod(ctx, c, cid, nodes)
	if f != nil {
		return nil, f
	}
	s, err := r.kube.Secrets(r.cfg.Namespace).Get(ctx, r.launchSecretName(cid), metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, refuse(refusedAPIError, hadoopipc.ClassIOException, "%v", kubeErr("get launch secret", err))
	}
	started := err == nil && ownedBy(s, p)
	return containerStatusOf(p, cid, started), nil
}

func ownedBy(s *corev1.Secret, p *corev1.Pod) bool {
	for _, o := range s.OwnerReferences {
		if o.Kind == "Pod" && o.UID == p.UID {
			return true
		}
	}
	return false
}
