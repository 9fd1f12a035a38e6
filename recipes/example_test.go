package recipes_test

import (
	"fmt"

	"github.com/junction-router/junction/recipes"
)

func ExampleParse() {
	doc, err := recipes.Parse([]byte(`
version: v1
providers:
  defaults: {default_model: small}
  models:
    - name: small
      backend_refs: [{base_url: "http://127.0.0.1:8000/v1", provider: openai}]
recipes:
  - name: default
    signals:
      keywords: [{name: urgent, keywords: [urgent, asap]}]
    decisions:
      - name: urgent
        priority: 100
        rules: {operator: OR, conditions: [{type: keyword, name: urgent}]}
        modelRefs: [{model: small}]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	l := doc.Listeners[0] // filled in by the defaults
	fmt.Printf("listener %s on %s:%d routes with recipe %q\n", l.Name, l.Address, l.Port, doc.Entrypoint(l))
	fmt.Println("keyword operator:", doc.Recipes[0].Signals.Keywords[0].Operator)

	// Every problem is reported, each with a JSON pointer to the value.
	_, err = recipes.Parse([]byte(`
version: v1
providers:
  defaults: {default_model: small}
  models: [{name: small, backend_refs: [{provider: demo}]}]
recipes:
  - name: default
    decisions:
      - name: code
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: codr}]
listeners: [{name: public, prot: 8801}]
`))
	fmt.Println(err)
	// Output:
	// listener public on 127.0.0.1:8801 routes with recipe "default"
	// keyword operator: OR
	// /listeners/0/prot: unknown field "prot"; did you mean "port"?
}
