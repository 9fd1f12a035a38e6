package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/storage"
)

// RunResponses is the conformance suite of a response store
// (storage.Responses): put, get, replace, delete, not-found errors and
// concurrent use. open returns a new, empty store.
func RunResponses(t *testing.T, open func(t *testing.T) storage.Responses) {
	ctx := context.Background()
	t.Run("PutGetDelete", func(t *testing.T) {
		s := open(t)
		r := storage.StoredResponse{ID: "resp_1", CreatedAt: time.Now().Truncate(time.Second),
			Response: []byte(`{"id":"resp_1"}`), Input: []byte(`[{"id":"msg_1"}]`), Conversation: []byte(`[{"id":"msg_1"},{"id":"msg_2"}]`)}
		if _, err := s.GetResponse(ctx, "resp_1"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("get before put: %v, want ErrNotFound", err)
		}
		if err := s.PutResponse(ctx, r); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetResponse(ctx, "resp_1")
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != r.ID || !bytes.Equal(got.Response, r.Response) || !bytes.Equal(got.Input, r.Input) ||
			!bytes.Equal(got.Conversation, r.Conversation) || !got.CreatedAt.Equal(r.CreatedAt) {
			t.Fatalf("got %+v, want %+v", got, r)
		}
		r.Response = []byte(`{"id":"resp_1","v":2}`)
		if err := s.PutResponse(ctx, r); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetResponse(ctx, "resp_1"); !bytes.Equal(got.Response, r.Response) {
			t.Fatalf("after replace: %s", got.Response)
		}
		if err := s.DeleteResponse(ctx, "resp_1"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetResponse(ctx, "resp_1"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("get after delete: %v, want ErrNotFound", err)
		}
		if err := s.DeleteResponse(ctx, "resp_1"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("second delete: %v, want ErrNotFound", err)
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		s := open(t)
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 8 {
					id := fmt.Sprintf("resp_%d_%d", i, j)
					if err := s.PutResponse(ctx, storage.StoredResponse{ID: id, Response: []byte(`{}`), Input: []byte(`[]`), Conversation: []byte(`[]`)}); err != nil {
						errs <- err
						return
					}
					if _, err := s.GetResponse(ctx, id); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	})
}
