//go:build !race

package builtin_test

import (
	"github.com/junction-router/junction/plugins/fastresponse"
	"github.com/junction-router/junction/plugins/headermutation"
	"github.com/junction-router/junction/plugins/requestparams"
	"github.com/junction-router/junction/plugins/systemprompt"
)

const user = `{"role":"user","content":"hi"}`

// parityRequests are bodies every configuration is tried on.
var parityRequests = []string{
	`{"model":"m","messages":[` + user + `]}`,
	`{"model":"m","temperature":0.5,"messages":[{"role":"system","content":"Old."},` + user + `]}`,
	`{"model":"m","messages":[{"name":"sys","role":"system","content":"a\u00e9\"b","x":[1,{"y":"}"}]},` + user + `]}`,
	`{"model":"m","messages":[{"role":"system","content":""},` + user + `]}`,
	`{"model":"m","messages":[{"role":"system","content":null},` + user + `]}`,
	`{"model":"m","messages":[{"role":"system"},` + user + `]}`,
	`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"Old.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"More."}]},` + user + `]}`,
	`{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"u"}},{"type":"text","text":"Old."}]},` + user + `]}`,
	`{"model":"m","messages":[{"role":"system","content":[]},` + user + `]}`,
	`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":""}]},` + user + `]}`,
	`{"model":"m","messages":[` + user + `,{"role":"system","content":"Late."}]}`,
	`{"model":"m","messages":[{"role":"developer","content":"Dev."},` + user + `]}`,
	`{"model":"m","messages":[],"logit_bias":{"1":2},"user":"u","seed":1,"max_tokens":8000,"n":4}`,
	`{"model":"m","messages":[],"max_completion_tokens":101,"max_tokens":100,"x_vendor":1,"chat_template_kwargs":{"a":true}}`,
	`{"model":"m","messages":[],"max_tokens":null,"stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"f"}}]}`,
	`{"model":"m","messages":[],"max_tokens":"many"}`,
	`{"model":"m","messages":[],"max_tokens":4096.0,"n":2}`,
}

// parityConfigs are configurations of the four plugins that also run
// natively (internal/plugin/native), valid and refused ones.
var parityConfigs = map[string][]string{
	systemprompt.Type: {
		`{"system_prompt":"Be careful.","mode":"insert"}`, `{"system_prompt":"P","mode":"replace"}`,
		`{"system_prompt":"P"}`, `{"system_prompt":"Use <b> & \"quotes\"\n."}`,
		`{"system_prompt":"P","enabled":false}`, `{"system_prompt":"P","enabled":true,"mode":"replace"}`,
		// refused
		`{"mode":"insert"}`, ``, `null`, `{"system_prompt":"  "}`, `{"system_prompt":"x","mode":"append"}`,
		`{"system_prompt":5}`, `{"system_prompt":"x","enabled":"yes"}`, `{"system_prompt":"x","prompt_mode":"insert"}`, `"be nice"`,
	},
	headermutation.Type: {
		`{"add":[{"name":"x-route-family","value":"code"}]}`, `{"add":[{"name":"X-Tag","value":"b"},{"name":"x-tag","value":"c"}]}`,
		`{"update":[{"name":"x-tag","value":"z"}]}`, `{"update":[{"name":"x-new","value":""}]}`, `{"delete":["x-tag","x-absent"]}`,
		`{"add":[{"name":"x-a","value":"1"}],"update":[{"name":"x-b","value":"2"}],"delete":["x-c"]}`, `{}`,
		// refused
		`{"remove":["x"]}`, `{"add":[{"name":"x","value":"1","append":true}]}`, `{"update":[{"value":"1"}]}`,
		`{"add":[{"name":"x"}]}`, `{"add":[{"name":"x a","value":"1"}]}`, `{"add":[{"name":":path","value":"/"}]}`,
		`{"add":[{"name":"x","value":"a\r\nb: c"}]}`, `{"update":[{"name":"authorization","value":"Bearer x"}]}`,
		`{"add":[{"name":"Host","value":"evil"}]}`, `{"delete":["content-length"]}`, `{"delete":["Connection"]}`,
		`{"add":[{"name":"te","value":"trailers"}]}`, `{"add":[{"name":"x-a","value":"1"}],"delete":["X-A"]}`,
		`{"add":[{"name":"x-a","value":"1"}],"update":[{"name":"x-a","value":"2"}]}`,
		`{"update":[{"name":"x-a","value":"1"},{"name":"x-a","value":"2"}]}`, `{"add":{"name":"x"}}`, `{"delete":[1]}`,
	},
	requestparams.Type: {
		`{"blocked_params":["logit_bias","user","absent"]}`, `{"max_tokens_limit":4096}`, `{"max_tokens_limit":100}`,
		`{"max_tokens_limit":100,"max_n":2}`, `{"max_n":1}`, `{"strip_unknown":true}`, `{"strip_unknown":false}`,
		`{"blocked_params":["max_tokens","x"],"max_tokens_limit":10,"strip_unknown":true}`,
		`{"blocked_params":["stream","stream_options","tools"]}`, ``, `{"max_tokens_limit":4096.0}`,
		// refused
		`{"max_tokens_limit":40.5}`, `{"max_tokens_limit":"4096"}`, `{"max_tokens_limit":0}`, `{"max_n":-1}`,
		`{"blocked_params":["model"]}`, `{"blocked_params":["x","messages"]}`, `{"blocked_params":[""]}`,
		`{"max_tokens":5}`, `{"strip_unknown":1}`,
	},
	fastresponse.Type: {`{"message":"I can't help with that request."}`, `{}`, `{"message":"no","status":403}`, `{"message":" "}`},
}
