package kube

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// Client is what the Source needs from a Kubernetes API server: list and
// watch Nodes and Pods (all namespaces), nothing else.
type Client interface {
	ListNodes(ctx context.Context, opts metav1.ListOptions) (*corev1.NodeList, error)
	WatchNodes(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	ListPods(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)
	WatchPods(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// restClient implements Client with a REST client that knows only core/v1.
// client-go's typed core/v1 client would register every API group's types
// through k8s.io/client-go/kubernetes/scheme: ~19 MB more in the server
// binary for types the GPG never reads.
type restClient struct {
	rc     rest.Interface
	params runtime.ParameterCodec
}

// NewClient connects to the API server rc describes.
func NewClient(rc *rest.Config) (Client, error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	rc = rest.CopyConfig(rc)
	gv := corev1.SchemeGroupVersion
	rc.GroupVersion = &gv
	rc.APIPath = "/api"
	rc.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(scheme, serializer.NewCodecFactory(scheme)).WithoutConversion()
	c, err := rest.RESTClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &restClient{rc: c, params: runtime.NewParameterCodec(scheme)}, nil
}

func (c *restClient) list(ctx context.Context, resource string, opts metav1.ListOptions, into runtime.Object) error {
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	return c.rc.Get().Resource(resource).VersionedParams(&opts, c.params).Timeout(timeout).Do(ctx).Into(into)
}

func (c *restClient) watch(ctx context.Context, resource string, opts metav1.ListOptions) (watch.Interface, error) {
	var timeout time.Duration
	if opts.TimeoutSeconds != nil {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	opts.Watch = true
	return c.rc.Get().Resource(resource).VersionedParams(&opts, c.params).Timeout(timeout).Watch(ctx)
}

func (c *restClient) ListNodes(ctx context.Context, opts metav1.ListOptions) (*corev1.NodeList, error) {
	l := &corev1.NodeList{}
	if err := c.list(ctx, "nodes", opts, l); err != nil {
		return nil, err
	}
	return l, nil
}

func (c *restClient) WatchNodes(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return c.watch(ctx, "nodes", opts)
}

func (c *restClient) ListPods(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	l := &corev1.PodList{}
	if err := c.list(ctx, "pods", opts, l); err != nil {
		return nil, err
	}
	return l, nil
}

func (c *restClient) WatchPods(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return c.watch(ctx, "pods", opts)
}

// NodeWriter is what the thirdPartyAllocations write-back needs: read one
// Node and merge-patch it. Its ClusterRole adds only `patch` on nodes to
// the reader's get/list/watch (rbac-writeback.yaml).
type NodeWriter interface {
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
	// PatchNode applies a JSON merge patch (RFC 7386) to the Node.
	PatchNode(ctx context.Context, name string, mergePatch []byte) (*corev1.Node, error)
}

// NewNodeWriter connects a NodeWriter to the API server rc describes.
func NewNodeWriter(rc *rest.Config) (NodeWriter, error) {
	c, err := NewClient(rc)
	if err != nil {
		return nil, err
	}
	return c.(*restClient), nil
}

func (c *restClient) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	n := &corev1.Node{}
	if err := c.rc.Get().Resource("nodes").Name(name).Do(ctx).Into(n); err != nil {
		return nil, err
	}
	return n, nil
}

func (c *restClient) PatchNode(ctx context.Context, name string, mergePatch []byte) (*corev1.Node, error) {
	n := &corev1.Node{}
	if err := c.rc.Patch(types.MergePatchType).Resource("nodes").Name(name).Body(mergePatch).Do(ctx).Into(n); err != nil {
		return nil, err
	}
	return n, nil
}
