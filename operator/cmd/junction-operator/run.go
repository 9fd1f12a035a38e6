package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/junction-router/junction/operator/api/v1alpha1"
	"github.com/junction-router/junction/operator/controller"
)

// runCmd starts the controller manager: the kubeconfig's cluster (KUBECONFIG, ~/.kube/config) or, in a pod,
// the in-cluster service account. It runs until ctx ends.
func runCmd(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("junction-operator run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	metricsAddr := fs.String("metrics-bind-address", ":8082", "the operator's own metrics (0 turns them off)")
	probeAddr := fs.String("health-probe-bind-address", ":8081", "/healthz and /readyz of the operator")
	leader := fs.Bool("leader-elect", false, "elect a leader, so that only one of several operator replicas reconciles")
	namespace := fs.String("namespace", "", "watch only this namespace (default: every namespace)")
	devLog := fs.Bool("dev-log", false, "human-readable logs instead of JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: junction-operator run [flags]")
		fs.PrintDefaults()
		return errUsage
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(*devLog), zap.WriteTo(stderr)))
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("no cluster to talk to: %w (set KUBECONFIG, or run in a pod with a service account)", err)
	}
	mgr, err := newManager(cfg, managerFlags{metricsAddr: *metricsAddr, probeAddr: *probeAddr, leader: *leader, namespace: *namespace})
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// managerFlags are run's settings of the manager.
type managerFlags struct {
	metricsAddr, probeAddr string
	leader                 bool
	namespace              string
	// skipNameCheck lets a test make several managers in one process (controller names are checked
	// process-wide).
	skipNameCheck bool
}

// newManager makes the controller manager for cfg's cluster with the JunctionRouter controller set up and
// the health checks added; nothing runs until its Start.
func newManager(cfg *rest.Config, f managerFlags) (ctrl.Manager, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	opts := ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress: f.probeAddr,
		LeaderElection:         f.leader,
		LeaderElectionID:       "junction-operator.junction-router.io",
	}
	if f.skipNameCheck {
		opts.Controller.SkipNameValidation = &f.skipNameCheck
	}
	// Only the router's pods are cached (the controller watches them for its status), not every pod of the
	// cluster. Envoy Gateway's and the Gateway API's objects are unstructured, which the client reads from
	// the API server: a policy may live in the gateway's namespace, outside a --namespace cache.
	opts.Cache = cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}: {Label: labels.SelectorFromSet(labels.Set{"app.kubernetes.io/managed-by": "junction-operator"})},
	}}
	if f.namespace != "" {
		opts.Cache.DefaultNamespaces = map[string]cache.Config{f.namespace: {}}
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("start the manager: %w", err)
	}
	if err := (&controller.Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("set up the controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}
