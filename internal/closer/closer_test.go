package closer

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"testing"
)

type fakeCloser struct {
	name  string
	err   error
	order *[]string
}

func (f *fakeCloser) Close() error {
	*f.order = append(*f.order, f.name)
	return f.err
}

func TestAllClosesInOrderAndSkipsUnset(t *testing.T) {
	var order []string
	errA, errC := errors.New("a failed"), errors.New("c failed")
	var nilServer *http.Server // a typed nil: its Close would panic
	var nilFake *fakeCloser
	var nilIface io.Closer
	err := All(
		&fakeCloser{name: "a", err: errA, order: &order},
		nilIface,
		nilServer,
		&fakeCloser{name: "b", order: &order},
		nilFake,
		&fakeCloser{name: "c", err: errC, order: &order},
	)
	if want := []string{"a", "b", "c"}; !slices.Equal(order, want) {
		t.Fatalf("closed %v, want %v", order, want)
	}
	if !errors.Is(err, errA) || !errors.Is(err, errC) {
		t.Fatalf("err = %v, want both failures joined", err)
	}
	if err := All(); err != nil {
		t.Fatalf("All() = %v, want nil", err)
	}
}
