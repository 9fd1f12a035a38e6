package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/junction-router/junction/internal/state/redisstate/redistest"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/memresponses"
	"github.com/junction-router/junction/internal/storage/redisresponses"
	"github.com/junction-router/junction/internal/storage/sqlite"
)

// responseStores are the real backends the stored-response tests run on.
func responseStores(t *testing.T) map[string]func(t *testing.T) storage.Responses {
	return map[string]func(t *testing.T) storage.Responses{
		"memory": func(*testing.T) storage.Responses { return memresponses.New(memresponses.Options{}) },
		"redis": func(t *testing.T) storage.Responses {
			return redisresponses.New(redistest.New(t), redisresponses.Options{})
		},
		"sqlite": func(t *testing.T) storage.Responses {
			s, err := sqlite.Open(context.Background(), t.TempDir(), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
}

// stored reads the response's store field.
func stored(r *responses.Response) bool {
	var v struct{ Store bool }
	json.Unmarshal([]byte(r.RawJSON()), &v)
	return v.Store
}

// TestResponseStoreThroughOpenAIClient drives the store with openai-go:
// create (whole and streamed), retrieve, input items (paged), delete and
// the 404 after it; store: false keeps nothing.
func TestResponseStoreThroughOpenAIClient(t *testing.T) {
	for name, open := range responseStores(t) {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, withResponseStore(open(t)))
			ctx := context.Background()
			created, err := e.client.Responses.New(ctx, responses.ResponseNewParams{
				Model: "small",
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
					responses.ResponseInputItemParamOfMessage("first", responses.EasyInputMessageRoleUser),
					responses.ResponseInputItemParamOfMessage("second", responses.EasyInputMessageRoleUser),
					responses.ResponseInputItemParamOfMessage("third", responses.EasyInputMessageRoleUser),
				}},
			})
			if err != nil {
				t.Fatal(err)
			}
			if !stored(created) {
				t.Fatal("store is OpenAI's default: the response says it was stored")
			}
			got, err := e.client.Responses.Get(ctx, created.ID, responses.ResponseGetParams{})
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != created.ID || got.OutputText() != created.OutputText() || got.Model != "small" || got.Status != "completed" {
				t.Fatalf("retrieved %s %q %s, created %s %q", got.ID, got.OutputText(), got.Model, created.ID, created.OutputText())
			}
			page, err := e.client.Responses.InputItems.List(ctx, created.ID, responses.InputItemListParams{Limit: openai.Int(2)})
			if err != nil {
				t.Fatal(err)
			}
			texts := func(items []responses.ResponseItemUnion) (out []string) {
				for _, it := range items {
					var v struct {
						Content []struct{ Text string } `json:"content"`
					}
					json.Unmarshal([]byte(it.RawJSON()), &v)
					for _, c := range v.Content {
						out = append(out, c.Text)
					}
				}
				return out
			}
			if got := strings.Join(texts(page.Data), ","); got != "third,second" || !page.HasMore {
				t.Fatalf("first page (desc, limit 2): %s has_more=%v", got, page.HasMore)
			}
			next, err := e.client.Responses.InputItems.List(ctx, created.ID, responses.InputItemListParams{Limit: openai.Int(2), After: openai.String(page.Data[1].ID)})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(texts(next.Data), ","); got != "first" || next.HasMore {
				t.Fatalf("second page: %s has_more=%v", got, next.HasMore)
			}
			asc, err := e.client.Responses.InputItems.List(ctx, created.ID, responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(texts(asc.Data), ","); got != "first,second,third" {
				t.Fatalf("asc: %s", got)
			}

			// A streamed answer is stored once complete, before response.completed arrives.
			stream := e.client.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "big",
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("streamed")}})
			var done responses.Response
			for stream.Next() {
				if ev := stream.Current(); ev.Type == "response.completed" {
					done = ev.Response
				}
			}
			if err := stream.Err(); err != nil || done.ID == "" {
				t.Fatalf("stream: %v %q", err, done.ID)
			}
			if got, err := e.client.Responses.Get(ctx, done.ID, responses.ResponseGetParams{}); err != nil || got.OutputText() != done.OutputText() {
				t.Fatalf("streamed response retrieved: %v", err)
			}

			if err := e.client.Responses.Delete(ctx, created.ID); err != nil {
				t.Fatal(err)
			}
			_, err = e.client.Responses.Get(ctx, created.ID, responses.ResponseGetParams{})
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Type != "invalid_request_error" {
				t.Fatalf("after delete: %v", err)
			}
			if err := e.client.Responses.Delete(ctx, created.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
				t.Fatalf("second delete: %v", err)
			}

			unstored, err := e.client.Responses.New(ctx, responses.ResponseNewParams{Model: "small", Store: openai.Bool(false),
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("forget me")}})
			if err != nil || stored(unstored) {
				t.Fatalf("store false: %v", err)
			}
			if _, err := e.client.Responses.Get(ctx, unstored.ID, responses.ResponseGetParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
				t.Fatalf("store false was kept: %v", err)
			}
		})
	}
}

// TestConversationAcrossModels continues a conversation three turns through
// previous_response_id, each turn on another model: each backend sees the
// earlier turns (inputs, answers, a tool call and its result) before the
// new input.
func TestConversationAcrossModels(t *testing.T) {
	for name, open := range responseStores(t) {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			e := newEnv(t, withResponseStore(store))
			ctx := context.Background()
			first, err := e.client.Responses.New(ctx, responses.ResponseNewParams{Model: "small",
				Instructions: openai.String("Be brief."),
				Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("my name is Ada")}})
			if err != nil {
				t.Fatal(err)
			}
			call := responses.ResponseInputItemParamOfFunctionCallOutput("sunny")
			call.OfFunctionCallOutput.CallID = openai.String("call_1")
			second, err := e.client.Responses.New(ctx, responses.ResponseNewParams{Model: "big",
				PreviousResponseID: openai.String(first.ID),
				Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
					responses.ResponseInputItemParamOfFunctionCall(`{"city":"Paris"}`, "call_1", "weather"),
					call,
				}}})
			if err != nil {
				t.Fatal(err)
			}
			if second.PreviousResponseID != first.ID {
				t.Fatalf("previous_response_id echoed %q", second.PreviousResponseID)
			}
			roles := func(model string) string {
				var msgs []struct {
					Role    string `json:"role"`
					Content any    `json:"content"`
				}
				b, _ := json.Marshal(e.ups[model].last(t).Body["messages"])
				json.Unmarshal(b, &msgs)
				var out []string
				for _, m := range msgs {
					s, _ := m.Content.(string)
					if parts, ok := m.Content.([]any); ok && len(parts) > 0 {
						s, _ = parts[0].(map[string]any)["text"].(string)
					}
					out = append(out, m.Role+":"+s)
				}
				return strings.Join(out, "|")
			}
			want := "user:my name is Ada|assistant:" + first.OutputText() + "|assistant:|tool:sunny"
			if got := roles("big"); got != want {
				t.Fatalf("turn 2 upstream messages\n got %s\nwant %s", got, want)
			}
			third, err := e.client.Responses.New(ctx, responses.ResponseNewParams{Model: "coder",
				PreviousResponseID: openai.String(second.ID),
				Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("what is my name?")}})
			if err != nil {
				t.Fatal(err)
			}
			want += "|assistant:" + second.OutputText() + "|user:what is my name?"
			if got := roles("coder"); got != want {
				t.Fatalf("turn 3 upstream messages\n got %s\nwant %s", got, want)
			}
			if third.Model != "coder" {
				t.Fatalf("turn 3 model %s", third.Model)
			}

			// input_items lists what the response was generated from, as
			// OpenAI does: every earlier turn's input and output, then its own input.
			items, err := e.client.Responses.InputItems.List(ctx, third.ID, responses.InputItemListParams{Order: responses.InputItemListParamsOrderAsc, Limit: openai.Int(100)})
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, it := range items.Data {
				k := it.Type
				if it.Type == "message" {
					k += ":" + it.Role
				}
				kinds = append(kinds, k)
			}
			if got, want := strings.Join(kinds, ","), "message:user,message:assistant,function_call,function_call_output,message:assistant,message:user"; got != want {
				t.Fatalf("input_items of turn 3\n got %s\nwant %s", got, want)
			}
			// Each turn is stored once: turn 3 holds only its own input.
			if r, err := store.GetResponse(ctx, third.ID); err != nil || r.PreviousID != second.ID || strings.Count(string(r.Input), `"id"`) != 1 {
				t.Fatalf("turn 3 stored %s (previous %q), %v: want its own input only", r.Input, r.PreviousID, err)
			}

			_, err = e.client.Responses.New(ctx, responses.ResponseNewParams{Model: "small",
				PreviousResponseID: openai.String("resp_unknown"),
				Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "previous_response_id" || apiErr.Code != "previous_response_not_found" ||
				apiErr.Message != "Previous response with id 'resp_unknown' not found." {
				t.Fatalf("unknown previous_response_id: %v", err)
			}
			// A deleted turn in the middle: the conversation cannot be
			// rebuilt, and says which response is gone.
			if err := e.client.Responses.Delete(ctx, second.ID); err != nil {
				t.Fatal(err)
			}
			_, err = e.client.Responses.New(ctx, responses.ResponseNewParams{Model: "small",
				PreviousResponseID: openai.String(third.ID),
				Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("and now?")}})
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "previous_response_not_found" || !strings.Contains(apiErr.Message, second.ID) {
				t.Fatalf("a conversation with a deleted turn: %v", err)
			}
			if _, err := e.client.Responses.InputItems.List(ctx, third.ID, responses.InputItemListParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, second.ID) ||
				apiErr.Response.Header.Get("x-should-retry") != "false" {
				t.Fatalf("input_items with a deleted turn: %v", err)
			}
			if got, err := e.client.Responses.Get(ctx, third.ID, responses.ResponseGetParams{}); err != nil || got.ID != third.ID {
				t.Fatalf("turn 3 itself after turn 2 was deleted: %v", err)
			}
		})
	}
}

// TestReadAfterWriteEmbedded: the embedded store writes behind the
// request; a GET, input_items and a continuation right after each create
// find the response, and every one is durable once the store is closed.
func TestReadAfterWriteEmbedded(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, dir, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withResponseStore(s))
	var ids []string
	prev := ""
	for i := range 20 {
		p := responses.ResponseNewParams{Model: "small", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(fmt.Sprintf("turn %d", i))}}
		if prev != "" {
			p.PreviousResponseID = openai.String(prev)
		}
		r, err := e.client.Responses.New(ctx, p)
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		if got, err := e.client.Responses.Get(ctx, r.ID, responses.ResponseGetParams{}); err != nil || got.ID != r.ID {
			t.Fatalf("GET right after create %d: %v", i, err)
		}
		items, err := e.client.Responses.InputItems.List(ctx, r.ID, responses.InputItemListParams{Limit: openai.Int(100)})
		if err != nil || len(items.Data) != 2*i+1 {
			t.Fatalf("input_items right after create %d: %d items, %v; want %d", i, len(items.Data), err, 2*i+1)
		}
		ids = append(ids, r.ID)
		prev = r.ID
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = sqlite.Open(ctx, dir, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	chain, err := storage.Chain(ctx, s, ids[len(ids)-1], 0)
	if err != nil || len(chain) != len(ids) {
		t.Fatalf("after reopening: %d turns, %v", len(chain), err)
	}
}

// TestModelRetrieve: GET /v1/models/{id} through openai-go, and 404.
func TestModelRetrieve(t *testing.T) {
	e := newEnv(t)
	m, err := e.client.Models.Get(context.Background(), "big")
	if err != nil || m.ID != "big" || m.Object != "model" || m.OwnedBy != "openai" || m.Created == 0 {
		t.Fatalf("%+v %v", m, err)
	}
	if m, err := e.client.Models.Get(context.Background(), "MoM"); err != nil || m.ID != "MoM" {
		t.Fatalf("%+v %v", m, err)
	}
	resp, err := http.Get(e.gw.URL + "/v1/models/nope")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || *decodeError(t, b).Error.Code != "model_not_found" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}
