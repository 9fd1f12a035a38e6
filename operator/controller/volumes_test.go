package controller_test

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/junction-router/junction/operator/api/v1alpha1"
	"github.com/junction-router/junction/operator/controller"
	"github.com/junction-router/junction/recipes"
)

const tlsSample = "../config/samples/junctionrouter-redis-tls.yaml"

// TestRedisTLSFromMountedSecret: the Redis-over-TLS sample's Secret volume and its mount reach the pod
// template after the operator's configuration volume, and the ConfigMap's document names the mounted files as
// global.state.redis.tls, which Junction accepts.
func TestRedisTLSFromMountedSecret(t *testing.T) {
	e := newEnvFrom(t, tlsSample, nil, nil)
	e.reconcile()
	jr := e.resource()
	if d := condition(jr, v1alpha1.ConditionDegraded); d.Status == metav1.ConditionTrue {
		t.Fatalf("the sample was refused: %+v", d)
	}

	var dep appsv1.Deployment
	if !e.get("junction-redis-tls", &dep) {
		t.Fatal("no Deployment")
	}
	pod := dep.Spec.Template.Spec
	if len(pod.Volumes) != 2 || pod.Volumes[0].Name != "config" || pod.Volumes[0].ConfigMap == nil ||
		pod.Volumes[1].Name != "redis-tls" || pod.Volumes[1].Secret == nil || pod.Volumes[1].Secret.SecretName != "redis-tls" {
		t.Errorf("volumes = %+v", pod.Volumes)
	}
	mounts := pod.Containers[0].VolumeMounts
	if len(mounts) != 2 || mounts[0].Name != "config" || mounts[0].MountPath != "/etc/junction" ||
		mounts[1].Name != "redis-tls" || mounts[1].MountPath != "/etc/junction-redis-tls" || !mounts[1].ReadOnly {
		t.Errorf("volume mounts = %+v", mounts)
	}

	var cm corev1.ConfigMap
	if !e.get("junction-redis-tls-config", &cm) {
		t.Fatal("no ConfigMap")
	}
	d, _, err := recipes.ParseSource([]byte(cm.Data[controller.ConfigKey]))
	if err != nil {
		t.Fatalf("Junction refuses the ConfigMap's document: %v", err)
	}
	st := d.Global.State
	if st == nil || st.Redis == nil || st.Redis.TLS == nil || !st.Redis.TLS.Enabled ||
		st.Redis.TLS.CAFile != "/etc/junction-redis-tls/ca.crt" || st.Redis.TLS.CertFile != "/etc/junction-redis-tls/tls.crt" ||
		st.Redis.TLS.KeyFile != "/etc/junction-redis-tls/tls.key" {
		t.Fatalf("global.state = %+v\n%s", st, cm.Data[controller.ConfigKey])
	}
}

// TestUnmountedTLSFileRefused: a TLS file under no mount, a volume or mount taking the operator's name or
// directory, a mount of no volume: each is refused (Degraded and Ready False, reason VolumesRefused) with the
// field and what to do, and the last good ConfigMap and Deployment stay as they were.
func TestUnmountedTLSFileRefused(t *testing.T) {
	tls := func(jr *v1alpha1.JunctionRouter) *v1alpha1.TLSFiles {
		return jr.Spec.Config.ResponseCache.KeyValue.Connection.TLS
	}
	for _, tc := range []struct {
		name string
		edit func(*v1alpha1.JunctionRouter)
		want []string
	}{
		{"file outside the mount", func(jr *v1alpha1.JunctionRouter) { tls(jr).CAFile = "/etc/ssl/redis/ca.crt" },
			[]string{"spec.config.response_cache.key_value.connection.tls.ca_file: /etc/ssl/redis/ca.crt is in no volume mounted",
				"spec.volumeMounts: /etc/junction-redis-tls", "mountPath: /etc/ssl/redis"}},
		{"no mounts at all", func(jr *v1alpha1.JunctionRouter) { jr.Spec.VolumeMounts = nil },
			[]string{"tls.ca_file: /etc/junction-redis-tls/ca.crt is in no volume", "tls.cert_file", "tls.key_file", "spec.volumeMounts: none"}},
		{"a prefix is not a parent", func(jr *v1alpha1.JunctionRouter) { tls(jr).KeyFile = "/etc/junction-redis-tls-old/tls.key" },
			[]string{"tls.key_file: /etc/junction-redis-tls-old/tls.key is in no volume"}},
		{"relative file", func(jr *v1alpha1.JunctionRouter) { tls(jr).CAFile = "ca.crt" },
			[]string{`tls.ca_file: "ca.crt" is relative`}},
		{"the operator's volume name", func(jr *v1alpha1.JunctionRouter) {
			jr.Spec.Volumes[0].Name, jr.Spec.VolumeMounts[0].Name = "config", "config"
		}, []string{"spec.volumes[0].name: config is the operator's own volume", "spec.volumeMounts[0].name: config is the operator's configuration volume"}},
		{"the configuration's directory", func(jr *v1alpha1.JunctionRouter) {
			jr.Spec.VolumeMounts[0].MountPath = "/etc/junction/tls/"
			tls(jr).CAFile, tls(jr).CertFile, tls(jr).KeyFile = "/etc/junction/tls/ca.crt", "/etc/junction/tls/tls.crt", "/etc/junction/tls/tls.key"
		}, []string{"spec.volumeMounts[0].mountPath: /etc/junction/tls/ is where the operator mounts the configuration", "tls.ca_file: /etc/junction/tls/ca.crt is in no volume"}},
		{"a mount of no volume", func(jr *v1alpha1.JunctionRouter) { jr.Spec.Volumes = nil },
			[]string{`spec.volumeMounts[0].name: "redis-tls" is not one of spec.volumes`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvFrom(t, tlsSample, nil, nil)
			e.reconcile()
			var cm corev1.ConfigMap
			var dep appsv1.Deployment
			e.get("junction-redis-tls-config", &cm)
			e.get("junction-redis-tls", &dep)
			good, goodMounts := cm.Data[controller.ConfigKey], dep.Spec.Template.Spec.Containers[0].VolumeMounts

			e.update(tc.edit)
			e.reconcile()
			jr := e.resource()
			d := condition(jr, v1alpha1.ConditionDegraded)
			if d.Status != metav1.ConditionTrue || d.Reason != controller.ReasonVolumesRefused {
				t.Fatalf("Degraded = %+v", d)
			}
			for _, w := range tc.want {
				if !strings.Contains(d.Message, w) {
					t.Errorf("Degraded message lacks %q:\n%s", w, d.Message)
				}
			}
			if r := condition(jr, v1alpha1.ConditionReady); r.Status != metav1.ConditionFalse || r.Reason != controller.ReasonVolumesRefused {
				t.Errorf("Ready = %+v", r)
			}
			e.get("junction-redis-tls-config", &cm)
			e.get("junction-redis-tls", &dep)
			if cm.Data[controller.ConfigKey] != good {
				t.Error("a refused resource replaced the last good configuration")
			}
			if m := dep.Spec.Template.Spec.Containers[0].VolumeMounts; len(m) != len(goodMounts) || m[1].Name != goodMounts[1].Name || m[1].MountPath != goodMounts[1].MountPath {
				t.Errorf("a refused resource changed the pods' mounts: %+v", m)
			}
		})
	}
}
