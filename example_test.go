package junction_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"

	"github.com/junction-router/junction"
	"github.com/junction-router/junction/recipes"
)

// A small recipe: math questions go to the big model, the rest to the small
// one. Both are answered by the in-process demo backend, so no network is
// needed.
const recipe = `
version: v1
listeners: [{name: public, address: 127.0.0.1, port: 8801}]
providers:
  defaults: {default_model: small}
  models:
    - {name: small, backend_refs: [{provider: demo}]}
    - {name: big, backend_refs: [{provider: demo}]}
recipes:
  - name: default
    signals:
      keywords: [{name: math, operator: OR, keywords: [prove, integral]}]
    decisions:
      - name: math
        priority: 10
        rules: {operator: AND, conditions: [{type: keyword, name: math}]}
        modelRefs: [{model: big}]
`

// Start a Junction from Go, with every listener on a free loopback port,
// and send it one chat completion.
func Example() {
	doc, err := recipes.Parse([]byte(recipe))
	if err != nil {
		log.Fatal(err)
	}
	data, err := os.MkdirTemp("", "junction-data") // uploaded files, vector stores, memories
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(data)
	srv, err := junction.New(junction.Options{
		Document:       doc,
		DataDir:        data,
		ListenerAddrs:  map[string]string{"public": "127.0.0.1:0"},
		ExtprocAddr:    "127.0.0.1:0",
		ManagementAddr: "127.0.0.1:0",
		MetricsAddr:    "127.0.0.1:0",
		SignalModels:   junction.SignalModelsLexical,
	})
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		if err := srv.Run(context.Background()); err != nil {
			log.Fatal(err)
		}
	}()
	defer srv.Shutdown(context.Background())
	<-srv.Ready()

	body := `{"model": "MoM", "messages": [{"role": "user", "content": "Prove that every group of prime order is cyclic"}]}`
	resp, err := http.Post("http://"+srv.GatewayAddr()+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Model string `json:"model"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Status)
	fmt.Println("decision:", resp.Header.Get("x-junction-decision"))
	fmt.Println("selected model:", resp.Header.Get("x-selected-model"))
	fmt.Println("answered by:", out.Model)
	// Output:
	// 200 OK
	// decision: math
	// selected model: big
	// answered by: big
}
