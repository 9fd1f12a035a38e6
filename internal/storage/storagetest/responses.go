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
// (storage.Responses): put, get, replace, delete, not-found errors,
// conversations followed by storage.Chain (a broken one reported) and
// concurrent use. open returns a new, empty store.
func RunResponses(t *testing.T, open func(t *testing.T) storage.Responses) {
	ctx := context.Background()
	t.Run("PutGetDelete", func(t *testing.T) {
		s := open(t)
		r := storage.StoredResponse{ID: "resp_1", CreatedAt: time.Now().Truncate(time.Second),
			Response: []byte(`{"id":"resp_1"}`), Input: []byte(`[{"id":"msg_1"}]`), PreviousID: "resp_0"}
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
			got.PreviousID != r.PreviousID || !got.CreatedAt.Equal(r.CreatedAt) {
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
	t.Run("Chain", func(t *testing.T) {
		s := open(t)
		prev := ""
		for i := range 5 {
			id := fmt.Sprintf("resp_%d", i)
			if err := s.PutResponse(ctx, storage.StoredResponse{ID: id, PreviousID: prev, Response: []byte(`{}`), Input: []byte(fmt.Sprintf(`[{"id":"msg_%d"}]`, i))}); err != nil {
				t.Fatal(err)
			}
			prev = id
		}
		chain, err := storage.Chain(ctx, s, "resp_4", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(chain) != 5 {
			t.Fatalf("chain of resp_4: %d turns, want 5", len(chain))
		}
		for i, r := range chain {
			if want := fmt.Sprintf(`[{"id":"msg_%d"}]`, i); string(r.Input) != want {
				t.Fatalf("turn %d input %s, want %s (oldest first)", i, r.Input, want)
			}
		}
		if _, err := storage.Chain(ctx, s, "resp_4", 4); !errors.Is(err, storage.ErrChainTooLong) {
			t.Fatalf("chain of 5 with a bound of 4: %v, want ErrChainTooLong", err)
		}
		if _, err := storage.Chain(ctx, s, "resp_x", 0); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("unknown id: %v, want ErrNotFound", err)
		}
		if err := s.DeleteResponse(ctx, "resp_1"); err != nil {
			t.Fatal(err)
		}
		var broken *storage.ChainBrokenError
		if _, err := storage.Chain(ctx, s, "resp_4", 0); !errors.As(err, &broken) || broken.Missing != "resp_1" || !errors.Is(err, storage.ErrChainBroken) {
			t.Fatalf("chain past a deleted turn: %v, want ChainBrokenError naming resp_1", err)
		}
		if chain, err := storage.Chain(ctx, s, "resp_0", 0); err != nil || len(chain) != 1 {
			t.Fatalf("the first turn alone: %d, %v", len(chain), err)
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
					if err := s.PutResponse(ctx, storage.StoredResponse{ID: id, Response: []byte(`{}`), Input: []byte(`[]`)}); err != nil {
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
