package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/junction-router/junction/operator/api/v1alpha1"
)

// Reasons of a Degraded condition that names a pod.
const (
	ReasonCrashLoop      = "CrashLoopBackOff"
	ReasonImagePull      = "ImagePullFailing"
	ReasonOOMKilled      = "OOMKilled"
	ReasonNotReady       = "ReadinessFailing"
	ReasonContainerSetup = "ContainerConfigFailing"
	ReasonUnschedulable  = "Unschedulable"
)

// ReadinessGrace is how long a started container may fail its readiness probe (GET /ready) before the pod
// counts as degraded. A start-up of minutes (model downloads) is the startup probe's, and a pod not yet
// started is not counted; after start, /ready fails while a reload loads new models, which takes seconds.
const ReadinessGrace = 3 * time.Minute

// maxPodProblems bounds how many pods one Degraded message names.
const maxPodProblems = 5

// podProblem is one pod in a state that needs a person: its reason code and what to say.
type podProblem struct {
	reason, message string
}

// podsOf lists the router's pods: the labels the Deployment's template gives them (pods are owned by a
// ReplicaSet, not by the resource, so they are found by label).
func (r *Reconciler) podsOf(ctx context.Context, jr *v1alpha1.JunctionRouter) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(jr.Namespace), client.MatchingLabels(selector(jr))); err != nil {
		return nil, err
	}
	pods := list.Items[:0]
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			pods = append(pods, p)
		}
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	return pods, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// diagnose says what is wrong with a pod, or nil: a container crash-looping, an image that cannot be pulled,
// a container killed for memory, a container whose configuration cannot be made (a missing Secret or
// ConfigMap key), readiness failing past ReadinessGrace, or no node to run on.
func diagnose(p *corev1.Pod, now time.Time) *podProblem {
	statuses := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		last := ""
		if t := cs.LastTerminationState.Terminated; t != nil {
			last = fmt.Sprintf(", last exit %d (%s)", t.ExitCode, t.Reason)
		}
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "CrashLoopBackOff":
				reason := ReasonCrashLoop
				if t := cs.LastTerminationState.Terminated; t != nil && t.Reason == "OOMKilled" {
					reason = ReasonOOMKilled
				}
				return &podProblem{reason, fmt.Sprintf("pod %s: container %s is in CrashLoopBackOff after %d restarts%s", p.Name, cs.Name, cs.RestartCount, last)}
			case "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull":
				return &podProblem{ReasonImagePull, fmt.Sprintf("pod %s: container %s: %s: %s", p.Name, cs.Name, w.Reason, w.Message)}
			case "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
				return &podProblem{ReasonContainerSetup, fmt.Sprintf("pod %s: container %s: %s: %s", p.Name, cs.Name, w.Reason, w.Message)}
			}
		}
		if t := cs.State.Terminated; t != nil && t.Reason == "OOMKilled" {
			return &podProblem{ReasonOOMKilled, fmt.Sprintf("pod %s: container %s was OOMKilled (exit %d, %d restarts): raise its memory limit", p.Name, cs.Name, t.ExitCode, cs.RestartCount)}
		}
		if t := cs.LastTerminationState.Terminated; t != nil && t.Reason == "OOMKilled" && !cs.Ready {
			return &podProblem{ReasonOOMKilled, fmt.Sprintf("pod %s: container %s was OOMKilled and restarted (%d restarts): raise its memory limit", p.Name, cs.Name, cs.RestartCount)}
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return &podProblem{ReasonUnschedulable, fmt.Sprintf("pod %s is unschedulable: %s", p.Name, c.Message)}
		}
	}
	// Readiness: the container started (its startup probe passed) but /ready has failed for longer than the grace.
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil || cs.Ready || cs.Started == nil || !*cs.Started {
			continue
		}
		since := cs.State.Running.StartedAt.Time
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue && c.LastTransitionTime.After(since) {
				since = c.LastTransitionTime.Time
			}
		}
		if d := now.Sub(since); d > ReadinessGrace {
			return &podProblem{ReasonNotReady, fmt.Sprintf("pod %s: container %s has failed its readiness probe (GET /ready) for %s", p.Name, cs.Name, d.Round(time.Second))}
		}
	}
	return nil
}

// podCounts is what the pods say: how many are ready, how many of those serve the current configuration,
// and the problems found.
type podCounts struct {
	ready, readyCurrent int32
	problems            []podProblem
}

func countPods(pods []corev1.Pod, hash string, now time.Time) podCounts {
	var c podCounts
	for i := range pods {
		p := &pods[i]
		if podReady(p) {
			c.ready++
			if p.Annotations[ConfigHashAnno] == hash {
				c.readyCurrent++
			}
		}
		if pr := diagnose(p, now); pr != nil {
			c.problems = append(c.problems, *pr)
		}
	}
	return c
}

// problemsMessage names the first pods with problems (and how many more).
func problemsMessage(ps []podProblem) string {
	var msgs []string
	for i, p := range ps {
		if i == maxPodProblems {
			msgs = append(msgs, fmt.Sprintf("and %d more pods", len(ps)-i))
			break
		}
		msgs = append(msgs, p.message)
	}
	return strings.Join(msgs, "; ")
}

// labelOwner maps a router pod (labelled through the Deployment's template) or an Envoy Gateway policy to
// its resource by the labels the controller gave it.
var labelOwner = handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
	return ownerByLabels(o)
})

// ownerByLabels is the resource named by an object's labels (a pod, or an Envoy Gateway policy, which names
// its resource's namespace too), or nothing when the controller did not label it.
func ownerByLabels(o client.Object) []reconcile.Request {
	l := o.GetLabels()
	name := l["app.kubernetes.io/instance"]
	if l["app.kubernetes.io/managed-by"] != "junction-operator" || name == "" {
		return nil
	}
	ns := o.GetNamespace()
	if owner := l[OwnerNamespaceLabel]; owner != "" {
		ns = owner
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}}}
}
