package recipes

import (
	"fmt"
	"net"
	"strconv"
)

// DefaultNativeAPIPort is the native API listener's port when it sets none.
const DefaultNativeAPIPort = 8899

// NativeAPI is the router's native API listener
// (global.services.native_api): it publishes the question answering of
// model deployments (POST /v1/decisions and /v1/systemone, GET
// /v1/systemone/models) under their deployment names, which are the public
// model names. The workers' classify, embeddings, rerank and bundle
// endpoints are never published. A change needs a restart.
type NativeAPI struct {
	// Enabled opens the listener; it publishes nothing otherwise.
	Enabled bool   `json:"enabled,omitempty"`
	Address string `json:"address,omitempty"`
	Port    int    `json:"port,omitempty"`
	// Models are the deployments published, by name; empty publishes every
	// deployment of global.model_catalog.
	Models []string `json:"models,omitempty"`
	// APIKeys, when non-empty, are the client keys the listener accepts
	// (Authorization: Bearer), each with the models it grants; without keys
	// any client on the listener's address may call every published model.
	APIKeys []NativeAPIKey `json:"api_keys,omitempty"`
	// MaxBodyBytes bounds a request body (DefaultNativeAPIMaxBodyBytes).
	MaxBodyBytes int64 `json:"max_body_bytes,omitempty"`
}

// DefaultNativeAPIMaxBodyBytes is the worker's own default request limit.
const DefaultNativeAPIMaxBodyBytes = 8 << 20

// NativeAPIKey is one client key of the native API: exactly one source (an
// environment variable or a file; keys are never written inline, so the
// configuration document holds no secret) and the models it grants. Grants
// are explicit: "*" grants every published model, including those
// published later; otherwise publishing a model never widens a key.
type NativeAPIKey struct {
	Name   string   `json:"name"`
	Env    string   `json:"env,omitempty"`
	File   string   `json:"file,omitempty"`
	Models []string `json:"models"`
}

// Addr is the listener's host:port with the defaults applied.
func (n *NativeAPI) Addr() string {
	addr, port := n.Address, n.Port
	if addr == "" {
		addr = DefaultAddress
	}
	if port == 0 {
		port = DefaultNativeAPIPort
	}
	return net.JoinHostPort(addr, strconv.Itoa(port))
}

// Published are the names of the deployments the listener publishes.
func (n *NativeAPI) Published(mc *ModelCatalog) []string {
	if len(n.Models) > 0 {
		return n.Models
	}
	var out []string
	if mc != nil {
		for _, d := range mc.Deployments {
			out = append(out, d.Name)
		}
	}
	return out
}

func (c *checker) nativeAPI() {
	n := c.doc.Global.Services.NativeAPI
	if n == nil {
		return
	}
	const base = "/global/services/native_api"
	c.address(base+"/address", n.Address)
	if n.Port != 0 { // 0: DefaultNativeAPIPort
		c.port(base+"/port", n.Port)
	}
	if n.MaxBodyBytes < 0 {
		c.add(base+"/max_body_bytes", CodeInvalidValue, "must not be negative (got %d; 0 means %d)", n.MaxBodyBytes, DefaultNativeAPIMaxBodyBytes)
	}
	mc := c.doc.Global.ModelCatalog
	deployed := map[string]bool{}
	var names []string
	if mc != nil {
		for _, d := range mc.Deployments {
			deployed[d.Name] = true
			names = append(names, d.Name)
		}
	}
	if n.Enabled && !c.doc.Global.ModelRuntimeEnabled() {
		c.add(base+"/enabled", CodeConflict, "global.router.enabled is false, so no model deployment runs for the native API to publish; set global.router.enabled: true or native_api.enabled: false")
	} else if n.Enabled && len(names) == 0 {
		c.add(base+"/enabled", CodeMissingField, "the native API publishes model deployments, and global.model_catalog.deployments declares none; add a deployment or set enabled: false")
	}
	published := map[string]bool{}
	for i, m := range n.Models {
		p := fmt.Sprintf("%s/models/%d", base, i)
		switch {
		case published[m]:
			c.add(p, CodeDuplicate, "deployment %q is already published", m)
		case !deployed[m]:
			c.add(p, CodeUnknownRef, "deployment %q is not in global.model_catalog.deployments%s", m, knownList(m, names))
		}
		published[m] = true
	}
	if len(n.Models) == 0 {
		published = deployed
	}
	keyNames := map[string]bool{}
	for i, k := range n.APIKeys {
		p := fmt.Sprintf("%s/api_keys/%d", base, i)
		switch {
		case k.Name == "":
			c.add(p+"/name", CodeMissingField, "a key needs a name (errors and logs name the key, never its value)")
		case keyNames[k.Name]:
			c.add(p+"/name", CodeDuplicate, "key %q is defined twice", k.Name)
		}
		keyNames[k.Name] = true
		if (k.Env == "") == (k.File == "") {
			c.add(p, CodeConflict, "key %q needs exactly one source: env (an environment variable name) or file (a path); keys are never written inline", k.Name)
		}
		if len(k.Models) == 0 {
			c.add(p+"/models", CodeMissingField, "key %q grants no model: list the published models it may call, or \"*\" for every published model", k.Name)
		}
		for j, m := range k.Models {
			if m != "*" && !published[m] {
				c.add(fmt.Sprintf("%s/models/%d", p, j), CodeUnknownRef, "key %q grants %q, which the native API does not publish (native_api.models, or every deployment when that is empty)", k.Name, m)
			}
		}
	}
}
