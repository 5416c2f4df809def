package hadoopipc

import (
	"context"
	"errors"

	"google.golang.org/protobuf/proto"
)

// ErrorClass names the Java exception class a sentinel error is sent as.
type ErrorClass struct {
	Err   error  // matched with errors.Is
	Class string // Java class name, e.g. ClassApplicationNotFound
}

// ClassMap is a server's table of sentinel errors and the Java exception
// classes they become on the wire: the one place a component's errors are
// translated into Hadoop's terms. The first entry an error matches wins.
// Set it as Protocol.Errors to translate every handler's errors.
type ClassMap []ErrorClass

// Remote turns a handler error into the reply a Hadoop server sends. nil
// stays nil; an error that already carries a *RemoteError (errors.As) is
// returned unchanged, its class chosen by whoever built it; any other error
// becomes an ERROR_APPLICATION reply of the class of the first entry it
// matches, YarnException if none, with the error's text as the message.
func (m ClassMap) Remote(err error) error {
	if err == nil {
		return nil
	}
	var re *RemoteError
	if errors.As(err, &re) {
		return err
	}
	class := ClassYarnException
	for _, e := range m {
		if errors.Is(err, e.Err) {
			class = e.Class
			break
		}
	}
	return Errorf(class, "%s", err.Error())
}

// wrap returns call with its errors passed through Remote.
func (m ClassMap) wrap(call func(ctx context.Context, req proto.Message) (proto.Message, error)) func(ctx context.Context, req proto.Message) (proto.Message, error) {
	return func(ctx context.Context, req proto.Message) (proto.Message, error) {
		resp, err := call(ctx, req)
		if err != nil {
			return nil, m.Remote(err)
		}
		return resp, nil
	}
}

// NewOf returns a constructor of empty *T messages, the newReq argument of
// NewMethod: NewMethod("allocate", NewOf[yarnpb.AllocateRequestProto](), h).
func NewOf[T any]() func() *T { return func() *T { return new(T) } }
