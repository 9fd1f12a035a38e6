// Package controller reconciles JunctionRouter resources: the converted configuration in a ConfigMap, the
// router's Deployment (mounting it, and the resource's own volumes), one Service with its four ports, a
// HorizontalPodAutoscaler and an Ingress when enabled, an Envoy Gateway EnvoyExtensionPolicy when a gateway
// is referenced, and the Ready and Degraded conditions read from the router's pods and its Deployment.
package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/junction-router/junction/operator/api/v1alpha1"
	"github.com/junction-router/junction/operator/convert"
)

// The router's container: the configuration file the ConfigMap is mounted as, the image when the resource
// names none.
const (
	DefaultImage   = "ghcr.io/junction-router/junction"
	DefaultTag     = "latest"
	ConfigKey      = "config.yaml"
	configDir      = convert.ConfigDir
	configVolume   = convert.ConfigVolume
	ConfigHashAnno = "junction-router.io/config-hash"
	containerName  = "junction"
	// maxMessage keeps a condition's message well under the API's 32768 characters.
	maxMessage = 4000
)

// Reasons of the conditions.
const (
	ReasonConfigRefused   = "ConfigRefused"
	ReasonVolumesRefused  = "VolumesRefused"
	ReasonAvailable       = "Available"
	ReasonProgressing     = "Progressing"
	ReasonScaledToZero    = "ScaledToZero"
	ReasonReplicasFailing = "ReplicasFailing"
	ReasonAsExpected      = "AsExpected"
)

// notReadyRecheck is how soon a resource whose pods are not all ready is looked at again without an event: a
// pod failing its readiness probe changes nothing the controller watches until it passes.
const notReadyRecheck = 30 * time.Second

// The operator's ClusterRole (config/rbac/role.yaml, make operator-crd) is generated from these markers.
// +kubebuilder:rbac:groups=junction-router.io,resources=junctionrouters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=junction-router.io,resources=junctionrouters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=junction-router.io,resources=junctionrouters/finalizers,verbs=update
// +kubebuilder:rbac:groups=core,resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=gateway.envoyproxy.io,resources=envoyextensionpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=referencegrants,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways;httproutes,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=configmaps;services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

// Reconciler reconciles one JunctionRouter at a time.
type Reconciler struct {
	client.Client
	Scheme *runtime.Scheme
	// Now is the clock pod states are judged by (how long readiness has failed); nil is time.Now.
	Now func() time.Time
}

// SetupWithManager registers the reconciler; a change to any owned object, or to one of the router's pods
// (owned by a ReplicaSet, so mapped by label), reconciles its resource again. Envoy Gateway's policies are
// watched when the cluster has the kind at start (they may live in another namespace: mapped by label too);
// installed later, they are written all the same, and their status is read on the next reconcile.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.JunctionRouter{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&autoscalingv2.HorizontalPodAutoscaler{}).
		Owns(&networkingv1.Ingress{}).
		Watches(&corev1.Pod{}, labelOwner)
	switch ok, err := r.hasKind(EnvoyExtensionPolicyGVK); {
	case err != nil:
		// Discovery failing at start should not keep the operator from running: the policies are still
		// written, only Envoy Gateway's verdicts wait for the next reconcile.
		mgr.GetLogger().Error(err, "cannot tell whether the cluster has Envoy Gateway; its policies are not watched")
	case ok:
		pol := &unstructured.Unstructured{}
		pol.SetGroupVersionKind(EnvoyExtensionPolicyGVK)
		b = b.Watches(pol, labelOwner)
	}
	return b.Named("junctionrouter").Complete(r)
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Reconcile brings the children of one resource to what its spec says and its status to what they show.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var jr v1alpha1.JunctionRouter
	if err := r.Get(ctx, req.NamespacedName, &jr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !jr.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, &jr)
	}
	doc, convErr := convert.ToYAML(&jr)
	mountErr := convert.CheckMounts(&jr)
	if err := errors.Join(convErr, mountErr); err != nil {
		// A configuration Junction would refuse is never written, nor pods that could not read its TLS files:
		// the pods keep serving the last good one.
		reason, what := ReasonConfigRefused, "the configuration was refused"
		if convErr == nil {
			reason, what = ReasonVolumesRefused, "the pods' volumes were refused"
		}
		log.FromContext(ctx).Info(what, "resource", req.NamespacedName, "reason", err.Error())
		r.setCondition(&jr, v1alpha1.ConditionDegraded, metav1.ConditionTrue, reason, err.Error())
		r.setCondition(&jr, v1alpha1.ConditionReady, metav1.ConditionFalse, reason, what+"; see the Degraded condition")
		return ctrl.Result{}, r.updateStatus(ctx, &jr)
	}
	sum := sha256.Sum256(doc)
	hash := "sha256:" + hex.EncodeToString(sum[:])

	if err := r.configMap(ctx, &jr, doc); err != nil {
		return ctrl.Result{}, fmt.Errorf("configmap: %w", err)
	}
	dep, err := r.deployment(ctx, &jr, hash)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("deployment: %w", err)
	}
	if err := r.service(ctx, &jr); err != nil {
		return ctrl.Result{}, fmt.Errorf("service: %w", err)
	}
	if err := r.autoscaler(ctx, &jr); err != nil {
		return ctrl.Result{}, fmt.Errorf("horizontalpodautoscaler: %w", err)
	}
	if err := r.ingress(ctx, &jr); err != nil {
		return ctrl.Result{}, fmt.Errorf("ingress: %w", err)
	}
	again, err := r.gateway(ctx, &jr)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("gateway wiring: %w", err)
	}
	pods, err := r.podsOf(ctx, &jr)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("pods: %w", err)
	}
	jr.Status.ConfigHash = hash
	if !r.readStatus(&jr, dep, pods, hash) && (again == 0 || again > notReadyRecheck) {
		again = notReadyRecheck
	}
	return ctrl.Result{RequeueAfter: again}, r.updateStatus(ctx, &jr)
}

// Labels of every child of jr; the Deployment's selector is the last two.
func labels(jr *v1alpha1.JunctionRouter) map[string]string {
	return map[string]string{
		"app.kubernetes.io/managed-by": "junction-operator",
		"app.kubernetes.io/name":       "junction",
		"app.kubernetes.io/instance":   jr.Name,
	}
}

func selector(jr *v1alpha1.JunctionRouter) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "junction", "app.kubernetes.io/instance": jr.Name}
}

// ConfigMapName, ServiceName: the children's names (the Deployment, HPA and Ingress take the resource's).
func ConfigMapName(jr *v1alpha1.JunctionRouter) string { return jr.Name + "-config" }
func ServiceName(jr *v1alpha1.JunctionRouter) string   { return jr.Name }

func (r *Reconciler) configMap(ctx context.Context, jr *v1alpha1.JunctionRouter, doc []byte) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName(jr), Namespace: jr.Namespace}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		cm.Labels = labels(jr)
		cm.Data = map[string]string{ConfigKey: string(doc)}
		return controllerutil.SetControllerReference(jr, cm, r.Scheme)
	})
	return err
}

func image(jr *v1alpha1.JunctionRouter) string {
	repo, tag := jr.Spec.Image.Repository, jr.Spec.Image.Tag
	if repo == "" {
		repo = DefaultImage
	}
	if tag == "" {
		tag = DefaultTag
	}
	if reg := strings.TrimSuffix(jr.Spec.Image.ImageRegistry, "/"); reg != "" {
		repo = reg + "/" + repo
	}
	return repo + ":" + tag
}

func metricsPorts(jr *v1alpha1.JunctionRouter) (port, target int32, proto corev1.Protocol, on bool) {
	m := jr.Spec.Metrics
	port, target, proto = m.Port, m.TargetPort, m.Protocol
	if port == 0 {
		port = convert.MetricsPort
	}
	if target == 0 {
		target = convert.MetricsPort
	}
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	return port, target, proto, m.Enabled == nil || *m.Enabled
}

func (r *Reconciler) deployment(ctx context.Context, jr *v1alpha1.JunctionRouter, hash string) (*appsv1.Deployment, error) {
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: jr.Name, Namespace: jr.Namespace}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, dep, func() error {
		dep.Labels = labels(jr)
		switch {
		case !jr.Spec.Autoscaling.Enabled:
			replicas := int32(1)
			if jr.Spec.Replicas != nil {
				replicas = *jr.Spec.Replicas
			}
			dep.Spec.Replicas = &replicas
		case dep.Spec.Replicas == nil:
			// Under the autoscaler the Deployment starts at minReplicas; after that the HPA owns the count.
			minR := int32(1)
			if jr.Spec.Autoscaling.MinReplicas != nil {
				minR = *jr.Spec.Autoscaling.MinReplicas
			}
			dep.Spec.Replicas = &minR
		}
		dep.Spec.Selector = &metav1.LabelSelector{MatchLabels: selector(jr)}
		tpl := &dep.Spec.Template
		tpl.Labels = labels(jr)
		// The hash rolls the pods when the configuration changes (some settings are read at start only).
		tpl.Annotations = map[string]string{ConfigHashAnno: hash}
		_, target, proto, metricsOn := metricsPorts(jr)
		ports := []corev1.ContainerPort{
			{Name: "http", ContainerPort: convert.GatewayPort, Protocol: corev1.ProtocolTCP},
			{Name: "management", ContainerPort: convert.ManagementPort, Protocol: corev1.ProtocolTCP},
			{Name: "extproc", ContainerPort: convert.ExtprocPort, Protocol: corev1.ProtocolTCP},
		}
		if metricsOn {
			ports = append(ports, corev1.ContainerPort{Name: "metrics", ContainerPort: target, Protocol: proto})
		}
		pull := jr.Spec.Image.PullPolicy
		if pull == "" {
			pull = corev1.PullIfNotPresent
		}
		probe := func(path string, period, failures int32) *corev1.Probe {
			return &corev1.Probe{
				ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("management")}},
				PeriodSeconds:    period,
				TimeoutSeconds:   2,
				FailureThreshold: failures,
			}
		}
		c := corev1.Container{
			Name:            containerName,
			Image:           image(jr),
			ImagePullPolicy: pull,
			Args:            []string{"serve", "--config", configDir + "/" + ConfigKey},
			Ports:           ports,
			Env:             podEnv(jr),
			Resources:       jr.Spec.Resources,
			// /ready answers 200 once start-up completed (models loaded, listeners open); /health while the
			// process serves. A start-up of minutes (model downloads) is the startup probe's to wait out.
			StartupProbe:   probe("/health", 5, 60),
			ReadinessProbe: probe("/ready", 5, 3),
			LivenessProbe:  probe("/health", 10, 3),
			// The configuration, then the resource's own mounts (the TLS files of its connections).
			VolumeMounts: append([]corev1.VolumeMount{{Name: configVolume, MountPath: configDir, ReadOnly: true}}, jr.Spec.VolumeMounts...),
		}
		tpl.Spec.Containers = []corev1.Container{c}
		tpl.Spec.ImagePullSecrets = jr.Spec.ImagePullSecrets
		tpl.Spec.Volumes = append([]corev1.Volume{{Name: configVolume, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: ConfigMapName(jr)}},
		}}}, jr.Spec.Volumes...)
		return controllerutil.SetControllerReference(jr, dep, r.Scheme)
	})
	return dep, err
}

func (r *Reconciler) service(ctx context.Context, jr *v1alpha1.JunctionRouter) error {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: ServiceName(jr), Namespace: jr.Namespace}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, svc, func() error {
		svc.Labels = labels(jr)
		svc.Spec.Selector = selector(jr)
		if svc.Spec.Type == "" {
			svc.Spec.Type = corev1.ServiceTypeClusterIP
		}
		grpc := "grpc"
		ports := []corev1.ServicePort{
			{Name: "http", Port: convert.GatewayPort, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP},
			{Name: "management", Port: convert.ManagementPort, TargetPort: intstr.FromString("management"), Protocol: corev1.ProtocolTCP},
			{Name: "extproc", Port: convert.ExtprocPort, TargetPort: intstr.FromString("extproc"), Protocol: corev1.ProtocolTCP, AppProtocol: &grpc},
		}
		if port, _, proto, on := metricsPorts(jr); on {
			ports = append(ports, corev1.ServicePort{Name: "metrics", Port: port, TargetPort: intstr.FromString("metrics"), Protocol: proto})
		}
		svc.Spec.Ports = ports
		return controllerutil.SetControllerReference(jr, svc, r.Scheme)
	})
	return err
}

func (r *Reconciler) autoscaler(ctx context.Context, jr *v1alpha1.JunctionRouter) error {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: jr.Name, Namespace: jr.Namespace}}
	a := jr.Spec.Autoscaling
	if !a.Enabled {
		return r.deleteIfOwned(ctx, jr, hpa)
	}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, hpa, func() error {
		hpa.Labels = labels(jr)
		hpa.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: jr.Name}
		minR, maxR, cpu := int32(1), int32(10), int32(80)
		if a.MinReplicas != nil {
			minR = *a.MinReplicas
		}
		if a.MaxReplicas != nil {
			maxR = *a.MaxReplicas
		}
		if a.TargetCPUUtilizationPercentage != nil {
			cpu = *a.TargetCPUUtilizationPercentage
		}
		hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas = &minR, maxR
		metric := func(name corev1.ResourceName, pct int32) autoscalingv2.MetricSpec {
			return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: name, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &pct},
			}}
		}
		hpa.Spec.Metrics = []autoscalingv2.MetricSpec{metric(corev1.ResourceCPU, cpu)}
		if a.TargetMemoryUtilizationPercentage != nil {
			hpa.Spec.Metrics = append(hpa.Spec.Metrics, metric(corev1.ResourceMemory, *a.TargetMemoryUtilizationPercentage))
		}
		return controllerutil.SetControllerReference(jr, hpa, r.Scheme)
	})
	return err
}

func (r *Reconciler) ingress(ctx context.Context, jr *v1alpha1.JunctionRouter) error {
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: jr.Name, Namespace: jr.Namespace}}
	in := jr.Spec.Ingress
	if !in.Enabled {
		return r.deleteIfOwned(ctx, jr, ing)
	}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, ing, func() error {
		ing.Labels = labels(jr)
		ing.Annotations = in.Annotations
		if in.ClassName != "" {
			class := in.ClassName
			ing.Spec.IngressClassName = &class
		} else {
			ing.Spec.IngressClassName = nil
		}
		ing.Spec.Rules = nil
		for _, h := range in.Hosts {
			paths := h.Paths
			if len(paths) == 0 {
				paths = []v1alpha1.IngressPath{{}}
			}
			var hp []networkingv1.HTTPIngressPath
			for _, p := range paths {
				path, port := p.Path, p.ServicePort
				if path == "" {
					path = "/"
				}
				if port == 0 {
					port = convert.GatewayPort
				}
				pt := networkingv1.PathTypePrefix
				if p.PathType != "" {
					pt = networkingv1.PathType(p.PathType)
				}
				hp = append(hp, networkingv1.HTTPIngressPath{Path: path, PathType: &pt, Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: ServiceName(jr), Port: networkingv1.ServiceBackendPort{Number: port}},
				}})
			}
			ing.Spec.Rules = append(ing.Spec.Rules, networkingv1.IngressRule{Host: h.Host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: hp}}})
		}
		ing.Spec.TLS = nil
		for _, t := range in.TLS {
			ing.Spec.TLS = append(ing.Spec.TLS, networkingv1.IngressTLS{SecretName: t.SecretName, Hosts: t.Hosts})
		}
		return controllerutil.SetControllerReference(jr, ing, r.Scheme)
	})
	return err
}

// deleteIfOwned removes a child that was turned off, and only one this resource owns.
func (r *Reconciler) deleteIfOwned(ctx context.Context, jr *v1alpha1.JunctionRouter, obj client.Object) error {
	if obj == nil {
		return nil
	}
	if err := r.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(obj, jr) {
		return nil
	}
	if err := r.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// readStatus sets Ready, Degraded and the replica counts from the pods and the Deployment, and says whether
// the resource is Ready.
//
// Ready: the Deployment has rolled out its current revision (observed, every desired pod updated) and as many
// pods as desired pass /ready, counting only pods of the current configuration (the hash on their template).
// Degraded: a pod needs a person (crash loop, image pull, OOMKilled, its container configuration failing,
// readiness failing past ReadinessGrace, unschedulable; the message names the pod and its state), or the
// Deployment reports a failure (ReplicaFailure: pods it cannot create; a progress deadline exceeded). A pod
// that is merely starting is neither: Ready stays False until it passes /ready.
func (r *Reconciler) readStatus(jr *v1alpha1.JunctionRouter, dep *appsv1.Deployment, pods []corev1.Pod, hash string) bool {
	st := dep.Status
	desired := int32(1)
	if dep.Spec.Replicas != nil {
		desired = *dep.Spec.Replicas
	}
	pc := countPods(pods, hash, r.now())
	jr.Status.ReadyReplicas = pc.ready
	jr.Status.DesiredReplicas = desired
	current := st.ObservedGeneration >= dep.Generation
	var failure string
	for _, c := range st.Conditions {
		switch {
		case c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue:
			failure = "ReplicaFailure: " + c.Message
		case c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse:
			failure = "Progressing: " + c.Reason + ": " + c.Message
		}
	}
	rolledOut := current && st.UpdatedReplicas >= desired
	ready := false
	switch {
	case desired == 0:
		r.setCondition(jr, v1alpha1.ConditionReady, metav1.ConditionFalse, ReasonScaledToZero, "replicas is 0")
	case rolledOut && pc.readyCurrent >= desired:
		ready = true
		r.setCondition(jr, v1alpha1.ConditionReady, metav1.ConditionTrue, ReasonAvailable, fmt.Sprintf("%d of %d pods ready", pc.readyCurrent, desired))
	default:
		r.setCondition(jr, v1alpha1.ConditionReady, metav1.ConditionFalse, ReasonProgressing,
			fmt.Sprintf("%d of %d pods ready with the current configuration (%d ready in all), %d of %d updated", pc.readyCurrent, desired, pc.ready, st.UpdatedReplicas, desired))
	}
	switch {
	case len(pc.problems) > 0:
		r.setCondition(jr, v1alpha1.ConditionDegraded, metav1.ConditionTrue, pc.problems[0].reason, problemsMessage(pc.problems))
	case failure != "":
		r.setCondition(jr, v1alpha1.ConditionDegraded, metav1.ConditionTrue, ReasonReplicasFailing, failure)
	default:
		r.setCondition(jr, v1alpha1.ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected, "")
	}
	return ready || desired == 0
}

func (r *Reconciler) setCondition(jr *v1alpha1.JunctionRouter, typ string, status metav1.ConditionStatus, reason, msg string) {
	if len(msg) > maxMessage {
		msg = msg[:maxMessage] + "… (convert the resource with `junction operator convert` for every problem)"
	}
	meta.SetStatusCondition(&jr.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: jr.Generation,
	})
}

func (r *Reconciler) updateStatus(ctx context.Context, jr *v1alpha1.JunctionRouter) error {
	jr.Status.ObservedGeneration = jr.Generation
	// A conflict (the resource changed meanwhile) is returned too: controller-runtime reconciles again.
	return r.Status().Update(ctx, jr)
}

// SysmonGODEBUG is the GODEBUG value the router container gets unless spec.env sets GODEBUG itself:
// schedtrace > 0 keeps the Go runtime's sysmon out of its deep sleep, which every system call of an idle
// process ends (sysmon then polls every 20 µs for a millisecond or more), for 4 to 23% less CPU per request
// (docs/operator.md#runtime-tuning-sysmon). With 2147483647 ms (24.8 days) the trace it asks for is one
// "SCHED ..." line on stderr when the node's uptime reaches that, then one every 24.8 days.
const SysmonGODEBUG = "schedtrace=2147483647"

// podEnv is the resource's env, the Redis password of a key-value cache
// backend from its Secret under the name the converted configuration gives
// as global.state.redis.password_env, and GODEBUG=SysmonGODEBUG when env does
// not name GODEBUG (the user's wins, an empty value turning the tuning off).
func podEnv(jr *v1alpha1.JunctionRouter) []corev1.EnvVar {
	env := append([]corev1.EnvVar(nil), jr.Spec.Env...)
	cc := jr.Spec.Config.ResponseCache
	if cc == nil {
		cc = jr.Spec.Config.SemanticCache
	}
	if cc != nil && cc.BackendType == "key_value" && cc.KeyValue != nil && cc.KeyValue.Connection.PasswordSecretRef != nil {
		ref := cc.KeyValue.Connection.PasswordSecretRef.DeepCopy()
		env = append(env, corev1.EnvVar{Name: convert.RedisPasswordEnv, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: ref}})
	}
	if !slices.ContainsFunc(jr.Spec.Env, func(e corev1.EnvVar) bool { return e.Name == "GODEBUG" }) {
		env = append(env, corev1.EnvVar{Name: "GODEBUG", Value: SysmonGODEBUG})
	}
	return env
}
