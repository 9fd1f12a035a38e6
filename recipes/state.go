package recipes

import (
	"fmt"
	"net"
)

// State says where the state that several replicas must share lives (global.state): the rate-limit counters,
// the response cache and the Responses API's store. With backend redis every replica counts against the same
// buckets, so a limit of N admits N across all of them, an answer one replica cached is a hit on the others, and
// a stored response can be continued on any of them (global.services.response_cache.backend and
// response_api.store may still name memory or embedded to keep that feature per replica). Read at start-up only.
type State struct {
	// Backend is memory (default: each replica counts alone) or redis.
	Backend string `json:"backend,omitempty"`
	// Redis reaches the Redis of backend redis (required with it).
	Redis *StateRedis `json:"redis,omitempty"`
}

// State backends (State.Backend). "embedded" is accepted as the spelling of a single-replica store and behaves as
// memory for the rate-limit counters (they are not worth a disk write per request).
const (
	StateBackendMemory   = "memory"
	StateBackendEmbedded = "embedded"
	StateBackendRedis    = "redis"
)

// Redis modes (StateRedis.Mode).
const (
	StateRedisStandalone = "standalone"
	StateRedisCluster    = "cluster"
)

// StateRedis is global.state.redis. The password is a secret, so the configuration names the environment variable
// that holds it, never the password itself.
type StateRedis struct {
	// Mode is standalone (default: one Redis server, or a primary with replicas behind one address) or cluster
	// (a Redis Cluster, or a managed cluster endpoint).
	Mode string `json:"mode,omitempty"`
	// Address is the server's host:port; in cluster mode it may name the one seed node (a managed endpoint).
	Address string `json:"address,omitempty"`
	// Addresses are a cluster's seed nodes as host:port (mode cluster only): one is enough, the client learns the
	// rest from it; more keep it starting when one is down.
	Addresses   []string  `json:"addresses,omitempty"`
	DB          int       `json:"db,omitempty"`
	PasswordEnv string    `json:"password_env,omitempty"`
	TLS         *StateTLS `json:"tls,omitempty"`
	// KeyPrefix starts every key Junction writes (default "junction:"), so several deployments can share a Redis.
	KeyPrefix string `json:"key_prefix,omitempty"`
	// FailClosed refuses requests under a rate limit while Redis does not answer (429); the default, false,
	// admits them (fail open). Either way each failure is counted in junction_state_errors_total and logged.
	FailClosed bool `json:"fail_closed,omitempty"`
}

// StateTLS is global.state.redis.tls.
type StateTLS struct {
	Enabled  bool   `json:"enabled,omitempty"`
	CAFile   string `json:"ca_file,omitempty"`
	CertFile string `json:"cert_file,omitempty"`
	KeyFile  string `json:"key_file,omitempty"`
}

// StateBackend is the backend s names: memory when s is nil or names none.
func StateBackend(s *State) string {
	if s == nil || s.Backend == "" {
		return StateBackendMemory
	}
	return s.Backend
}

func (c *checker) state() {
	st := c.doc.Global.State
	if StateBackend(st) != StateBackendRedis {
		svc := c.doc.Global.Services
		if rc := svc.ResponseCache; rc != nil && rc.Backend == ResponseCacheRedis {
			c.add("/global/services/response_cache/backend", CodeInvalidValue, "redis keeps the cache in global.state's Redis: set global.state.backend: redis with redis.address, or use memory or embedded")
		}
		if svc.ResponseAPI.Store == ResponseStoreRedis {
			c.add("/global/services/response_api/store", CodeInvalidValue, "redis keeps the responses in global.state's Redis: set global.state.backend: redis with redis.address, or use memory or embedded")
		}
	}
	if st == nil {
		return
	}
	switch st.Backend {
	case "", StateBackendMemory, StateBackendEmbedded:
		if st.Redis != nil {
			c.add("/global/state/redis", CodeInvalidValue, "redis is set but backend is %q; set backend: redis or remove redis", StateBackend(st))
		}
	case StateBackendRedis:
		p := "/global/state/redis"
		r := st.Redis
		if r == nil {
			c.add(p, CodeMissingField, "backend redis needs redis: {address: <host:port>}")
			return
		}
		switch r.Mode {
		case "", StateRedisStandalone:
			if len(r.Addresses) > 0 {
				c.add(p+"/addresses", CodeInvalidValue, "addresses lists a Redis Cluster's nodes: set mode: cluster, or name the one server as address")
			} else if r.Address == "" {
				c.add(p+"/address", CodeMissingField, "name the Redis server as host:port (e.g. 127.0.0.1:6379)")
			}
		case StateRedisCluster:
			switch {
			case len(r.Addresses) > 0 && r.Address != "":
				c.add(p+"/address", CodeInvalidValue, "mode cluster takes its seed nodes from addresses: move address into addresses")
			case len(r.Addresses) == 0 && r.Address == "":
				c.add(p+"/addresses", CodeMissingField, "list one or more of the cluster's nodes as host:port (a managed cluster's endpoint is enough)")
			}
			for i, a := range r.Addresses {
				if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
					c.add(fmt.Sprintf("%s/addresses/%d", p, i), CodeInvalidValue, "%q is not host:port", a)
				}
			}
			if r.DB != 0 {
				c.add(p+"/db", CodeInvalidValue, "a Redis Cluster has database 0 only: remove db (got %d)", r.DB)
			}
		default:
			c.add(p+"/mode", CodeInvalidValue, "must be standalone or cluster (got %q)", r.Mode)
		}
		if r.DB < 0 || r.DB > 15 {
			c.add(p+"/db", CodeInvalidValue, "must be a Redis database number from 0 to 15 (got %d)", r.DB)
		}
		if r.PasswordEnv != "" && !isEnvName(r.PasswordEnv) {
			c.add(p+"/password_env", CodeInvalidValue, "must be an environment variable name (letters, digits, _), not the password itself")
		}
		if t := r.TLS; t != nil && !t.Enabled && (t.CAFile != "" || t.CertFile != "" || t.KeyFile != "") {
			c.add(p+"/tls/enabled", CodeInvalidValue, "TLS files are set but enabled is false; set enabled: true or remove the files")
		}
		if t := r.TLS; t != nil && (t.CertFile == "") != (t.KeyFile == "") {
			c.add(p+"/tls", CodeInvalidValue, "a client certificate needs both cert_file and key_file")
		}
	default:
		c.add("/global/state/backend", CodeInvalidValue, "must be memory, embedded or redis (got %q)", st.Backend)
	}
}
