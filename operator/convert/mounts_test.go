package convert_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/junction-router/junction/operator/convert"
)

// TestConvertRedisTLSSample: the Redis-over-TLS sample converts to global.state.redis.tls with the mounted
// files, which `junction config validate` accepts, and its mounts hold every file.
func TestConvertRedisTLSSample(t *testing.T) {
	r := loadFile(t, "../config/samples/junctionrouter-redis-tls.yaml")
	if err := convert.CheckMounts(r); err != nil {
		t.Fatal(err)
	}
	out, err := convert.ToYAML(r)
	if err != nil {
		t.Fatal(err)
	}
	tls := junctionValidate(t, out).Global.State.Redis.TLS
	if tls == nil || !tls.Enabled || tls.CAFile != "/etc/junction-redis-tls/ca.crt" || tls.CertFile != "/etc/junction-redis-tls/tls.crt" || tls.KeyFile != "/etc/junction-redis-tls/tls.key" {
		t.Fatalf("global.state.redis.tls = %+v\n%s", tls, out)
	}
}

// TestCheckMountsRouting: global.state.redis.tls written in spec.config.routing names files of the pod too,
// checked against the mounts by their path under routing; a disabled cache's TLS files are never read.
func TestCheckMountsRouting(t *testing.T) {
	const head = `
apiVersion: junction-router.io/v1alpha1
kind: JunctionRouter
metadata: {name: x}
spec:
`
	const routing = `
  config:
    routing:
      global:
        state: {backend: redis, redis: {address: "redis:6379", tls: {enabled: true, ca_file: /etc/redis-tls/ca.crt}}}
`
	err := convert.CheckMounts(loadResource(t, head+routing))
	var me *convert.MountError
	if !errors.As(err, &me) || len(me.Refused) != 1 || me.Refused[0].Path != "spec.config.routing.global.state.redis.tls.ca_file" ||
		!strings.Contains(me.Refused[0].Reason, "mountPath: /etc/redis-tls") {
		t.Fatalf("got %v", err)
	}
	mounted := `
  volumes: [{name: tls, secret: {secretName: redis-tls}}]
  volumeMounts: [{name: tls, mountPath: /etc/redis-tls/ca.crt, subPath: ca.crt}]
`
	if err := convert.CheckMounts(loadResource(t, head+mounted+routing)); err != nil {
		t.Fatalf("a file mounted by subPath: %v", err)
	}
	off := `
  config:
    response_cache:
      enabled: false
      backend_type: key_value
      key_value: {connection: {host: redis, tls: {enabled: true, ca_file: /nowhere/ca.crt}}}
`
	if err := convert.CheckMounts(loadResource(t, head+off)); err != nil {
		t.Fatalf("a disabled cache: %v", err)
	}
}
