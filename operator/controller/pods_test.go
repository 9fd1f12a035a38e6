package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/junction-router/junction/operator/api/v1alpha1"
	"github.com/junction-router/junction/operator/controller"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// routerPod is a pod as the Deployment's ReplicaSet makes it: the template's labels and configuration hash,
// owned by a ReplicaSet (not by the resource), its container running and ready unless edit says otherwise.
func routerPod(name, hash string, edit func(*corev1.Pod)) *corev1.Pod {
	yes := true
	started := metav1.NewTime(now.Add(-time.Hour))
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Labels: map[string]string{
				"app.kubernetes.io/managed-by": "junction-operator", "app.kubernetes.io/name": "junction",
				"app.kubernetes.io/instance": "junction-sample", "pod-template-hash": "7f9c",
			},
			Annotations:     map[string]string{controller.ConfigHashAnno: hash},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "junction-sample-7f9c", UID: "rs-uid", Controller: &yes}},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "junction", Image: "ghcr.io/junction-router/junction:v0.1.0"}}},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started},
			},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "junction", Ready: true, Started: &yes,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
			}},
		},
	}
	if edit != nil {
		edit(p)
	}
	return p
}

// notReady marks the pod's Ready condition false since at, its container not ready.
func notReady(p *corev1.Pod, at time.Time) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			p.Status.Conditions[i].Status = corev1.ConditionFalse
			p.Status.Conditions[i].LastTransitionTime = metav1.NewTime(at)
		}
	}
	p.Status.ContainerStatuses[0].Ready = false
}

func waiting(reason, msg string, restarts int32, last *corev1.ContainerStateTerminated) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		notReady(p, now.Add(-time.Minute))
		no := false
		cs := &p.Status.ContainerStatuses[0]
		cs.Started = &no
		cs.RestartCount = restarts
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
		if last != nil {
			cs.LastTerminationState = corev1.ContainerState{Terminated: last}
		}
	}
}

// TestStatusFromPods: Ready counts the pods that pass /ready with the current configuration; Degraded names
// the pod and its state for each failure a person must act on, and not for a pod that is merely starting.
func TestStatusFromPods(t *testing.T) {
	e := newEnv(t, nil)
	e.r.Now = func() time.Time { return now }
	e.reconcile()
	hash := e.resource().Status.ConfigHash
	var dep appsv1.Deployment
	e.get("junction-sample", &dep)
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2}
	if err := e.c.Status().Update(context.Background(), &dep); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	cases := []struct {
		name          string
		pods          []*corev1.Pod
		ready         metav1.ConditionStatus
		readyCount    int32
		degraded      metav1.ConditionStatus
		reason        string
		msg           []string
		requeueIfDown bool
	}{
		{name: "all ready", ready: metav1.ConditionTrue, readyCount: 2, degraded: metav1.ConditionFalse,
			pods: []*corev1.Pod{routerPod("jr-a", hash, nil), routerPod("jr-b", hash, nil)}},
		{name: "starting", ready: metav1.ConditionFalse, readyCount: 1, degraded: metav1.ConditionFalse, requeueIfDown: true,
			pods: []*corev1.Pod{routerPod("jr-a", hash, nil), routerPod("jr-b", hash, func(p *corev1.Pod) {
				notReady(p, now.Add(-20*time.Second))
				no := false
				p.Status.ContainerStatuses[0].Started = &no
			})}},
		{name: "readiness failing briefly (a reload)", ready: metav1.ConditionFalse, readyCount: 1, degraded: metav1.ConditionFalse, requeueIfDown: true,
			pods: []*corev1.Pod{routerPod("jr-a", hash, nil), routerPod("jr-b", hash, func(p *corev1.Pod) { notReady(p, now.Add(-time.Minute)) })}},
		{name: "readiness failing long", ready: metav1.ConditionFalse, readyCount: 1, degraded: metav1.ConditionTrue, reason: controller.ReasonNotReady,
			msg:  []string{"pod jr-b", "readiness probe (GET /ready)", "for 10m0s"},
			pods: []*corev1.Pod{routerPod("jr-a", hash, nil), routerPod("jr-b", hash, func(p *corev1.Pod) { notReady(p, now.Add(-10*time.Minute)) })}},
		{name: "crash loop", ready: metav1.ConditionFalse, readyCount: 1, degraded: metav1.ConditionTrue, reason: controller.ReasonCrashLoop,
			msg: []string{"pod jr-b", "container junction is in CrashLoopBackOff after 6 restarts", "last exit 1 (Error)"},
			pods: []*corev1.Pod{routerPod("jr-a", hash, nil), routerPod("jr-b", hash, waiting("CrashLoopBackOff", "back-off 5m0s restarting failed container", 6,
				&corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}))}},
		{name: "image pull back-off", ready: metav1.ConditionFalse, readyCount: 0, degraded: metav1.ConditionTrue, reason: controller.ReasonImagePull,
			msg: []string{"pod jr-a", "ImagePullBackOff", "Back-off pulling image"},
			pods: []*corev1.Pod{routerPod("jr-a", hash, waiting("ImagePullBackOff", `Back-off pulling image "ghcr.io/junction-router/junction:v0.1.0"`, 0, nil)),
				routerPod("jr-b", hash, waiting("ImagePullBackOff", "Back-off pulling image", 0, nil))}},
		{name: "image pull error", ready: metav1.ConditionFalse, readyCount: 1, degraded: metav1.ConditionTrue, reason: controller.ReasonImagePull,
			msg:  []string{"pod jr-b", "ErrImagePull", "not found"},
			pods: []*corev1.Pod{routerPod("jr-a", hash, nil), routerPod("jr-b", hash, waiting("ErrImagePull", "manifest unknown: not found", 0, nil))}},
		{name: "OOMKilled, crash looping", ready: metav1.ConditionFalse, readyCount: 1, degraded: metav1.ConditionTrue, reason: controller.ReasonOOMKilled,
			msg: []string{"pod jr-b", "CrashLoopBackOff", "last exit 137 (OOMKilled)"},
			pods: []*corev1.Pod{routerPod("jr-a", hash, nil), routerPod("jr-b", hash, waiting("CrashLoopBackOff", "back-off", 3,
				&corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}))}},
		{name: "OOMKilled, restarted and not ready yet", ready: metav1.ConditionFalse, readyCount: 1, degraded: metav1.ConditionTrue, reason: controller.ReasonOOMKilled,
			msg: []string{"pod jr-b", "was OOMKilled and restarted (1 restarts)", "raise its memory limit"},
			pods: []*corev1.Pod{routerPod("jr-a", hash, nil), routerPod("jr-b", hash, func(p *corev1.Pod) {
				notReady(p, now.Add(-10*time.Second))
				cs := &p.Status.ContainerStatuses[0]
				cs.RestartCount = 1
				cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}
			})}},
		{name: "OOMKilled, recovered", ready: metav1.ConditionTrue, readyCount: 2, degraded: metav1.ConditionFalse,
			pods: []*corev1.Pod{routerPod("jr-a", hash, nil), routerPod("jr-b", hash, func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}
			})}},
		{name: "missing Secret", ready: metav1.ConditionFalse, readyCount: 1, degraded: metav1.ConditionTrue, reason: controller.ReasonContainerSetup,
			msg:  []string{"pod jr-b", "CreateContainerConfigError", `secret "upstream-keys" not found`},
			pods: []*corev1.Pod{routerPod("jr-a", hash, nil), routerPod("jr-b", hash, waiting("CreateContainerConfigError", `secret "upstream-keys" not found`, 0, nil))}},
		{name: "unschedulable", ready: metav1.ConditionFalse, readyCount: 1, degraded: metav1.ConditionTrue, reason: controller.ReasonUnschedulable,
			msg: []string{"pod jr-b is unschedulable", "Insufficient memory"},
			pods: []*corev1.Pod{routerPod("jr-a", hash, nil), routerPod("jr-b", hash, func(p *corev1.Pod) {
				p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
					Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient memory."}}}
			})}},
		{name: "ready pods of the previous configuration", ready: metav1.ConditionFalse, readyCount: 2, degraded: metav1.ConditionFalse, requeueIfDown: true,
			pods: []*corev1.Pod{routerPod("jr-a", "sha256:old", nil), routerPod("jr-b", hash, nil)}},
		{name: "a terminating pod and another resource's pod are not counted", ready: metav1.ConditionFalse, readyCount: 1, degraded: metav1.ConditionFalse, requeueIfDown: true,
			pods: []*corev1.Pod{routerPod("jr-a", hash, nil), routerPod("jr-b", hash, func(p *corev1.Pod) {
				p.Finalizers = []string{"test/keep"}
				p.DeletionTimestamp = &metav1.Time{Time: now}
			}), routerPod("other-a", hash, func(p *corev1.Pod) {
				p.Labels["app.kubernetes.io/instance"] = "other"
				waiting("CrashLoopBackOff", "", 9, nil)(p)
			})}},
		{name: "one message names several pods", ready: metav1.ConditionFalse, readyCount: 0, degraded: metav1.ConditionTrue, reason: controller.ReasonCrashLoop,
			msg:  []string{"pod jr-a: container junction is in CrashLoopBackOff", "pod jr-b: container junction: ErrImagePull"},
			pods: []*corev1.Pod{routerPod("jr-a", hash, waiting("CrashLoopBackOff", "", 2, nil)), routerPod("jr-b", hash, waiting("ErrImagePull", "denied", 0, nil))}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("default")); err != nil {
				t.Fatal(err)
			}
			var left corev1.PodList
			if err := e.c.List(ctx, &left); err != nil {
				t.Fatal(err)
			}
			for i := range left.Items {
				// DeleteAllOf leaves pods with finalizers (terminating); drop them.
				p := &left.Items[i]
				p.Finalizers = nil
				if err := e.c.Update(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range tc.pods {
				p := p.DeepCopy()
				del := p.DeletionTimestamp
				p.DeletionTimestamp = nil
				if err := e.c.Create(ctx, p); err != nil {
					t.Fatal(err)
				}
				if del != nil {
					if err := e.c.Delete(ctx, p); err != nil {
						t.Fatal(err)
					}
				}
			}
			res := e.reconcile()
			jr := e.resource()
			r, d := condition(jr, v1alpha1.ConditionReady), condition(jr, v1alpha1.ConditionDegraded)
			if r.Status != tc.ready {
				t.Errorf("Ready = %+v, want %s", r, tc.ready)
			}
			if jr.Status.ReadyReplicas != tc.readyCount || jr.Status.DesiredReplicas != 2 {
				t.Errorf("ready/desired = %d/%d, want %d/2", jr.Status.ReadyReplicas, jr.Status.DesiredReplicas, tc.readyCount)
			}
			if d.Status != tc.degraded || (tc.reason != "" && d.Reason != tc.reason) {
				t.Errorf("Degraded = %+v, want %s %s", d, tc.degraded, tc.reason)
			}
			for _, m := range tc.msg {
				if !strings.Contains(d.Message, m) {
					t.Errorf("Degraded's message %q does not say %q", d.Message, m)
				}
			}
			if tc.requeueIfDown && res.RequeueAfter == 0 {
				t.Error("a resource that is not ready is not looked at again without an event")
			}
			if tc.ready == metav1.ConditionTrue && res.RequeueAfter != 0 {
				t.Errorf("a ready resource is requeued after %s", res.RequeueAfter)
			}
		})
	}
}

// TestStatusFromDeployment: the Deployment's own failures (pods it cannot create, a stuck roll-out) are
// Degraded even when no pod says anything, and pods ready before the Deployment has rolled out the current
// revision are not Ready.
func TestStatusFromDeployment(t *testing.T) {
	e := newEnv(t, nil)
	e.reconcile()
	hash := e.resource().Status.ConfigHash
	ctx := context.Background()
	for _, p := range []*corev1.Pod{routerPod("jr-a", hash, nil), routerPod("jr-b", hash, nil)} {
		if err := e.c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	setStatus := func(s appsv1.DeploymentStatus) {
		t.Helper()
		var dep appsv1.Deployment
		e.get("junction-sample", &dep)
		if s.ObservedGeneration == 0 {
			s.ObservedGeneration = dep.Generation
		}
		dep.Status = s
		if err := e.c.Status().Update(ctx, &dep); err != nil {
			t.Fatal(err)
		}
		e.reconcile()
	}
	setStatus(appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2})
	if r := condition(e.resource(), v1alpha1.ConditionReady); r.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v", r)
	}
	setStatus(appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 1, ReadyReplicas: 2})
	if r := condition(e.resource(), v1alpha1.ConditionReady); r.Status != metav1.ConditionFalse || !strings.Contains(r.Message, "1 of 2 updated") {
		t.Errorf("Ready during a roll-out = %+v", r)
	}
	setStatus(appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 1, ReadyReplicas: 2, Conditions: []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: "ReplicaSet has timed out progressing"},
	}})
	if d := condition(e.resource(), v1alpha1.ConditionDegraded); d.Status != metav1.ConditionTrue || !strings.Contains(d.Message, "ProgressDeadlineExceeded") {
		t.Errorf("Degraded on a stuck roll-out = %+v", d)
	}
	setStatus(appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, Conditions: []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: `pods "junction-sample-7f9c-x" is forbidden: exceeded quota`},
	}})
	if d := condition(e.resource(), v1alpha1.ConditionDegraded); d.Status != metav1.ConditionTrue || !strings.Contains(d.Message, "exceeded quota") {
		t.Errorf("Degraded on a replica failure = %+v", d)
	}
}
