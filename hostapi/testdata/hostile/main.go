// Command hostile is a test plugin that misbehaves as its configuration says:
//
//	{"do":"loop"}  its handler never returns
//	{"do":"bomb"}  its handler allocates until memory runs out
//	{"do":"exit"}  its handler exits the module
//	{"do":"malformed"}  it returns a field_set whose value is not JSON
//	{"do":"spin","n":N} it counts to N before answering
//	{"do":"ok"}    it behaves (sets x-hostile: ok)
//
// Its descriptor lies: the schema accepts any object, but the plugin refuses
// a configuration without "do".
package main

import (
	"encoding/json"
	"errors"
	"os"

	"github.com/junction-router/junction/sdk"
)

type hostile struct {
	Do string `json:"do"`
	N  int    `json:"n"`
}

var (
	sink int
	keep [][]byte
)

func (h *hostile) OnRequest(req *sdk.Request, res *sdk.Result) error {
	switch h.Do {
	case "loop":
		for i := 0; ; i++ {
			sink = i
		}
	case "bomb":
		for {
			b := make([]byte, 1<<20)
			b[0] = 1
			keep = append(keep, b)
		}
	case "exit":
		os.Exit(3)
	case "spin":
		for i := 0; i < h.N; i++ {
			sink += i
		}
	case "malformed":
		res.SetField("temperature", []byte("{not json"))
		return nil
	}
	res.SetHeader("x-hostile", "ok")
	return nil
}

func init() {
	sdk.Register(sdk.Descriptor{Type: "hostile", Version: "0", Schema: []byte(`{"type":"object"}`)},
		func(config []byte) (sdk.Plugin, error) {
			var h hostile
			if err := json.Unmarshal(config, &h); err != nil {
				return nil, err
			}
			if h.Do == "" {
				return nil, errors.New("do is required")
			}
			return &h, nil
		})
}

func main() {}
