package convert

import (
	"fmt"
	"path"
	"strings"

	"github.com/junction-router/junction/operator/api/v1alpha1"
)

// The controller mounts the configuration ConfigMap in the router's pods as the volume ConfigVolume at
// ConfigDir; a resource's own volumes and mounts may use neither.
const (
	ConfigVolume = "config"
	ConfigDir    = "/etc/junction"
)

// MountError lists the problems of what a resource mounts in the router's pods.
type MountError struct{ Refused []Refusal }

func (e *MountError) Error() string {
	return listRefusals(fmt.Sprintf("%d problem(s) with the volumes of the router's pods:", len(e.Refused)), e.Refused)
}

// CheckMounts checks what the router's pods mount: spec.volumes and spec.volumeMounts beside the operator's
// configuration volume (neither may take its name or directory, which the CRD refuses too; each mount names
// one of spec.volumes), and that every TLS file the converted configuration makes Junction read (a key_value
// cache backend's connection.tls, or global.state.redis.tls written in spec.config.routing) lies under one of
// the mounts: otherwise the pods would start and fail to reach Redis. The CRD cannot say the last two: a CEL
// rule comparing each file (or mount name) with every mount path (or volume) exceeds the API server's cost
// budget, the corev1 strings being of unbounded length. So the controller refuses such a resource with its
// Degraded condition, and `junction operator convert` with this error (a *MountError), before anything is
// written.
func CheckMounts(r *v1alpha1.JunctionRouter) error {
	var refused []Refusal
	refuse := func(p, format string, args ...any) {
		refused = append(refused, Refusal{Path: p, Reason: fmt.Sprintf(format, args...)})
	}
	volumes := map[string]bool{}
	for i, v := range r.Spec.Volumes {
		if v.Name == ConfigVolume {
			refuse(fmt.Sprintf("spec.volumes[%d].name", i), "%s is the operator's own volume (the configuration ConfigMap): give yours another name", ConfigVolume)
			continue
		}
		volumes[v.Name] = true
	}
	var mounts []string // the mount paths a file may lie under
	for i, m := range r.Spec.VolumeMounts {
		p := fmt.Sprintf("spec.volumeMounts[%d]", i)
		switch {
		case m.Name == ConfigVolume:
			refuse(p+".name", "%s is the operator's configuration volume, mounted at %s already: mount one of spec.volumes", ConfigVolume, ConfigDir)
		case !volumes[m.Name]:
			refuse(p+".name", "%q is not one of spec.volumes: add it there, say {name: %s, secret: {secretName: SECRET}}", m.Name, m.Name)
		}
		dir := path.Clean(m.MountPath)
		switch {
		case !path.IsAbs(m.MountPath):
			refuse(p+".mountPath", "%q is not an absolute path", m.MountPath)
		case under(dir, ConfigDir):
			refuse(p+".mountPath", "%s is where the operator mounts the configuration (read-only): mount elsewhere, say /etc/junction-tls", m.MountPath)
		default:
			mounts = append(mounts, dir)
		}
	}
	for _, f := range tlsFiles(r) {
		if !path.IsAbs(f.file) {
			refuse(f.path, "%q is relative: name the file by its absolute path in the pod, under one of spec.volumeMounts", f.file)
			continue
		}
		found := false
		for _, m := range mounts {
			found = found || under(path.Clean(f.file), m)
		}
		if found {
			continue
		}
		have := "none"
		if len(mounts) > 0 {
			have = strings.Join(mounts, ", ")
		}
		dir := path.Dir(path.Clean(f.file))
		if dir == "/" {
			dir = "/etc/junction-tls"
		}
		refuse(f.path, "%s is in no volume mounted in the router's pods (spec.volumeMounts: %s): mount the Secret holding it, "+
			"say spec.volumes: [{name: redis-tls, secret: {secretName: SECRET}}] and spec.volumeMounts: [{name: redis-tls, mountPath: %s, readOnly: true}]",
			f.file, have, dir)
	}
	if len(refused) > 0 {
		return &MountError{Refused: refused}
	}
	return nil
}

// under says whether the clean absolute path p is dir or lies below it (a mount of one file, by subPath, has
// the file's own path).
func under(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

type tlsFile struct{ path, file string }

// tlsFiles are the TLS files the converted configuration names, by the resource's field that says each: the
// enabled cache's key_value connection (the one convert maps; a vector_database backend is refused), and
// global.state.redis.tls passed through in spec.config.routing.
func tlsFiles(r *v1alpha1.JunctionRouter) []tlsFile {
	var out []tlsFile
	add := func(p string, enabled bool, ca, cert, key string) {
		if !enabled {
			return
		}
		for _, f := range []tlsFile{{p + ".ca_file", ca}, {p + ".cert_file", cert}, {p + ".key_file", key}} {
			if f.file != "" {
				out = append(out, f)
			}
		}
	}
	cfg := &r.Spec.Config
	p, cc := "spec.config.response_cache", cfg.ResponseCache
	if cc == nil {
		p, cc = "spec.config.semantic_cache", cfg.SemanticCache
	}
	if cc != nil && cc.Enabled != nil && *cc.Enabled && cc.BackendType == "key_value" && cc.KeyValue != nil {
		if t := cc.KeyValue.Connection.TLS; t != nil {
			add(p+".key_value.connection.tls", t.Enabled != nil && *t.Enabled, t.CAFile, t.CertFile, t.KeyFile)
		}
	}
	if cfg.Routing != nil && len(cfg.Routing.Raw) > 0 {
		if doc, err := rawObject(cfg.Routing.Raw); err == nil { // a malformed routing is convert's to refuse
			t := obj(obj(obj(obj(doc, "global"), "state"), "redis"), "tls")
			str := func(k string) string { s, _ := t[k].(string); return s }
			on, _ := t["enabled"].(bool)
			add("spec.config.routing.global.state.redis.tls", on, str("ca_file"), str("cert_file"), str("key_file"))
		}
	}
	return out
}
