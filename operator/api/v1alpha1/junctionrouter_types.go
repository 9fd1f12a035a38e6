package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// JunctionRouter is the operator resource: one Junction router deployment (its pods, Services, autoscaler,
// ingress) and the routing configuration it serves. The controller converts spec.config (with
// spec.modelEndpoints) into a Junction configuration document kept in a ConfigMap; `junction operator convert`
// does the same offline.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=jr,categories=junction
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type JunctionRouter struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   JunctionRouterSpec   `json:"spec,omitempty"`
	Status JunctionRouterStatus `json:"status,omitempty"`
}

// JunctionRouterList is a list of JunctionRouter.
//
// +kubebuilder:object:root=true
type JunctionRouterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []JunctionRouter `json:"items"`
}

// JunctionRouterSpec is where and how the router runs (replicas, image, resources, autoscaling, ingress, gateway,
// metrics port) and what it routes (config, modelEndpoints).
//
// +kubebuilder:validation:XValidation:rule="!(has(self.gateway) && has(self.gateway.failOpen) && self.gateway.failOpen && has(self.config) && has(self.config.streamed_body) && has(self.config.streamed_body.enabled) && self.config.streamed_body.enabled)",message="gateway.failOpen cannot be combined with config.streamed_body: Envoy sends streamed bodies full duplex, which must fail closed"
type JunctionRouterSpec struct {
	// Replicas is the number of router pods when autoscaling is off (the autoscaler's starting point when on).
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Image is the router's container image.
	// +kubebuilder:default={}
	// +optional
	Image ImageSpec `json:"image,omitempty"`

	// ImagePullSecrets name Secrets holding registry credentials.
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// Resources are the router container's requests and limits.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Env is added to the router container. Secrets reach the configuration by reference only: an upstream key
	// is an env entry with valueFrom.secretKeyRef here, named by the configuration's api_key_env fields.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Volumes are added to the router's pods beside the operator's own (named config: the configuration
	// ConfigMap); a Secret holding the TLS files of config's connections is mounted this way. None may be
	// named config.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(v, v.name != 'config')",message="config is the operator's own volume (the configuration ConfigMap): give yours another name"
	// +listType=map
	// +listMapKey=name
	// +optional
	Volumes []corev1.Volume `json:"volumes,omitempty"`

	// VolumeMounts mount Volumes in the router container beside its configuration at /etc/junction. Each
	// names one of Volumes (the controller checks), none config, none at or under /etc/junction. Every TLS file
	// config names (tls.ca_file, cert_file, key_file) must lie under one of these mount paths: the controller
	// refuses the resource otherwise, with its Degraded condition.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(m, m.name != 'config')",message="config is the operator's configuration volume, mounted at /etc/junction already: mount one of spec.volumes"
	// +kubebuilder:validation:XValidation:rule="self.all(m, m.mountPath != '/etc/junction' && !m.mountPath.startsWith('/etc/junction/'))",message="/etc/junction is where the operator mounts the configuration (read-only): mount elsewhere, say /etc/junction-tls"
	// +listType=map
	// +listMapKey=mountPath
	// +optional
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`

	// Autoscaling adds a HorizontalPodAutoscaler when enabled.
	// +kubebuilder:default={}
	// +optional
	Autoscaling AutoscalingSpec `json:"autoscaling,omitempty"`

	// Ingress adds an Ingress to the gateway Service when enabled.
	// +kubebuilder:default={}
	// +optional
	Ingress IngressSpec `json:"ingress,omitempty"`

	// Gateway, with existingRef set, runs the router in external-processing mode behind that Envoy gateway.
	// +optional
	Gateway *GatewaySpec `json:"gateway,omitempty"`

	// Metrics is the Prometheus metrics port.
	// +kubebuilder:default={}
	// +optional
	Metrics MetricsPortSpec `json:"metrics,omitempty"`

	// ModelEndpoints are the backend models the router forwards to; each becomes a model of the configuration.
	// +kubebuilder:validation:MaxItems=256
	// +optional
	ModelEndpoints []ModelEndpointSpec `json:"modelEndpoints,omitempty"`

	// Config is the routing configuration.
	// +optional
	Config ConfigSpec `json:"config,omitempty"`
}

// ImageSpec is a container image.
type ImageSpec struct {
	// Repository; default ghcr.io/junction-router/junction.
	// +optional
	Repository string `json:"repository,omitempty"`
	// Tag; default latest.
	// +optional
	Tag string `json:"tag,omitempty"`
	// PullPolicy of the image.
	// +kubebuilder:validation:Enum=Always;Never;IfNotPresent
	// +kubebuilder:default=IfNotPresent
	// +optional
	PullPolicy corev1.PullPolicy `json:"pullPolicy,omitempty"`
	// ImageRegistry, when set, is prefixed to the repository.
	// +optional
	ImageRegistry string `json:"imageRegistry,omitempty"`
}

// AutoscalingSpec configures a HorizontalPodAutoscaler.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",message="minReplicas must not exceed maxReplicas"
type AutoscalingSpec struct {
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// +kubebuilder:default=80
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	TargetCPUUtilizationPercentage *int32 `json:"targetCPUUtilizationPercentage,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	TargetMemoryUtilizationPercentage *int32 `json:"targetMemoryUtilizationPercentage,omitempty"`
}

// IngressSpec configures an Ingress in front of the gateway Service (8801).
//
// +kubebuilder:validation:XValidation:rule="!has(self.enabled) || !self.enabled || (has(self.hosts) && size(self.hosts) > 0)",message="an enabled ingress needs at least one host"
type IngressSpec struct {
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// +optional
	ClassName string `json:"className,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +optional
	Hosts []IngressHost `json:"hosts,omitempty"`
	// +optional
	TLS []IngressTLS `json:"tls,omitempty"`
}

// IngressHost is one host and its paths.
type IngressHost struct {
	// +kubebuilder:validation:MinLength=1
	Host string `json:"host"`
	// +optional
	Paths []IngressPath `json:"paths,omitempty"`
}

// IngressPath routes one path to a port of the router's Services.
type IngressPath struct {
	// +kubebuilder:default="/"
	// +optional
	Path string `json:"path,omitempty"`
	// +kubebuilder:validation:Enum=Exact;Prefix;ImplementationSpecific
	// +kubebuilder:default=Prefix
	// +optional
	PathType string `json:"pathType,omitempty"`
	// ServicePort is one of the router's ports (8801 gateway, 8080 management); default 8801.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	ServicePort int32 `json:"servicePort,omitempty"`
}

// IngressTLS is one TLS secret and the hosts it covers.
type IngressTLS struct {
	// +kubebuilder:validation:MinLength=1
	SecretName string `json:"secretName"`
	// +optional
	Hosts []string `json:"hosts,omitempty"`
}

// GatewaySpec references an existing Envoy gateway.
type GatewaySpec struct {
	// ExistingRef selects external-processing mode behind this gateway: the controller writes an Envoy Gateway
	// EnvoyExtensionPolicy that attaches the router's ext_proc service (port 50051) to it.
	// +optional
	ExistingRef *GatewayRef `json:"existingRef,omitempty"`
	// FailOpen lets Envoy forward a request unrouted and unchecked when Junction cannot be reached or fails to
	// answer (the policy's failOpen). Off by default: such a request gets a 5xx instead. It cannot be combined
	// with config.streamed_body (Envoy Gateway refuses failOpen with full-duplex bodies).
	// +kubebuilder:default=false
	// +optional
	FailOpen *bool `json:"failOpen,omitempty"`
	// MessageTimeout is the longest Envoy waits for Junction's answer to one ext_proc message (the policy's
	// messageTimeout); keep it above model_deployments.signal_timeout_ms when model-backed signals are bound.
	// +kubebuilder:default="5s"
	// +kubebuilder:validation:Pattern=`^([0-9]{1,5}(h|m|s|ms)){1,4}$`
	// +optional
	MessageTimeout string `json:"messageTimeout,omitempty"`
}

// GatewayRef names the Gateway API object (a Gateway, or one HTTPRoute) the router's ext_proc is attached to.
type GatewayRef struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// Kind of the object: a Gateway (every route through it) or an HTTPRoute (that route only).
	// +kubebuilder:validation:Enum=Gateway;HTTPRoute
	// +kubebuilder:default=Gateway
	// +optional
	Kind string `json:"kind,omitempty"`
}

// MetricsPortSpec is the metrics port of the router's pods and Service.
type MetricsPortSpec struct {
	// +kubebuilder:default=9190
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`
	// +kubebuilder:default=9190
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	TargetPort int32 `json:"targetPort,omitempty"`
	// +kubebuilder:validation:Enum=TCP;UDP;SCTP
	// +kubebuilder:default=TCP
	// +optional
	Protocol corev1.Protocol `json:"protocol,omitempty"`
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// ModelEndpointSpec is one backend model and where it is served.
type ModelEndpointSpec struct {
	// Name of the model as decisions' modelRefs name it.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Model is the name the backend serves it under.
	// +kubebuilder:validation:MinLength=1
	Model string `json:"model"`
	// Catalog names a built-in model card.
	// +optional
	Catalog string `json:"catalog,omitempty"`
	// Reasoning names the model's reasoning family (a key of providers.reasoning_families in config.routing).
	// +optional
	Reasoning string `json:"reasoning,omitempty"`
	// LoRAs are adapters served by the same backend under their own names.
	// +kubebuilder:validation:MaxItems=50
	// +optional
	LoRAs []LoRASpec `json:"loras,omitempty"`
	// Backend says how the endpoint is reached.
	Backend EndpointBackend `json:"backend"`
	// Weight of this endpoint among endpoints serving the same model.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// LoRASpec is one LoRA adapter.
type LoRASpec struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	Name string `json:"name"`
	// +kubebuilder:validation:MaxLength=500
	// +optional
	Description string `json:"description,omitempty"`
}

// EndpointBackend is a model endpoint's backend: a KServe InferenceService, LlamaStack services found by
// labels, or a plain Service.
//
// +kubebuilder:validation:XValidation:rule="self.type != 'kserve' || has(self.inferenceServiceName)",message="backend type kserve needs inferenceServiceName"
// +kubebuilder:validation:XValidation:rule="self.type != 'llamastack' || has(self.discoveryLabels)",message="backend type llamastack needs discoveryLabels"
// +kubebuilder:validation:XValidation:rule="self.type != 'service' || has(self.service)",message="backend type service needs service"
type EndpointBackend struct {
	// +kubebuilder:validation:Enum=kserve;llamastack;service
	Type string `json:"type"`
	// +optional
	InferenceServiceName string `json:"inferenceServiceName,omitempty"`
	// +optional
	DiscoveryLabels map[string]string `json:"discoveryLabels,omitempty"`
	// +optional
	Service *ServiceBackend `json:"service,omitempty"`
}

// ServiceBackend is an OpenAI-compatible Service.
type ServiceBackend struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Namespace; default the resource's.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +kubebuilder:default=8000
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`
	// Path is the API prefix; default /v1.
	// +optional
	Path string `json:"path,omitempty"`
	// APIKeyEnv names an environment variable (set from a Secret in spec.env) holding the upstream key.
	// +optional
	APIKeyEnv string `json:"api_key_env,omitempty"`
}

// JunctionRouterStatus is what the controller observed.
type JunctionRouterStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ReadyReplicas are the router pods that pass /ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// DesiredReplicas is the pod count the Deployment asks for (spec.replicas, or the autoscaler's).
	// +optional
	DesiredReplicas int32 `json:"desiredReplicas,omitempty"`
	// ConfigHash is the canonical hash of the configuration in the ConfigMap.
	// +optional
	ConfigHash string `json:"configHash,omitempty"`
	// Conditions: Ready (every desired pod is ready), Degraded (the configuration was refused, or pods are
	// missing or failing, naming the pod and its state), GatewayWired (with existingRef: whether the Envoy
	// Gateway policy is written and accepted).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition types of JunctionRouterStatus.
const (
	ConditionReady    = "Ready"
	ConditionDegraded = "Degraded"
)
