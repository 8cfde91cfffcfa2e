package kubernetes

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/coordkit/coordkit/election"
	"github.com/coordkit/coordkit/internal/sidecar"
)

// Issue 34: the shipped sidecar manifests fail the way their users choose.
// Each property is checked for both forms, classic (sidecar.yaml) and
// native (sidecar-native.yaml).

// sidecarDeployments are the Deployments of the two forms, by form.
func sidecarDeployments(t *testing.T) map[string]*appsv1.Deployment {
	t.Helper()
	forms := map[string]*appsv1.Deployment{}
	for f, o := range loadFiles(t) {
		if !strings.HasPrefix(f, "sidecar") {
			continue
		}
		require.Len(t, o.deployments, 1, f)
		forms[sidecarForm(o.deployments[0])] = o.deployments[0]
	}
	require.Len(t, forms, 2, "a classic and a native form")
	return forms
}

// forEachForm runs check on the Deployment of each form.
func forEachForm(t *testing.T, check func(t *testing.T, d *appsv1.Deployment, sc, app *corev1.Container)) {
	for form, d := range sidecarDeployments(t) {
		t.Run(form, func(t *testing.T) {
			sc, app := sidecarPod(t, d)
			check(t, d, sc, app)
		})
	}
}

// No probe that restarts the sidecar or takes the pod out of the Service
// depends on etcd: each answers 200 from the real API of a sidecar that
// has not reached etcd (and none is /healthz, the etcd session's, nor
// /readyz, the leader-only variant's). The application's readiness is its
// own probe, on its own port.
func TestSidecarProbesDoNotDependOnEtcd(t *testing.T) {
	forEachForm(t, func(t *testing.T, _ *appsv1.Deployment, sc, app *corev1.Container) {
		api := sidecar.NewAPI(sidecar.APIConfig{Tracker: sidecar.NewTracker("e", "e/", "a", nil)})
		defer api.Close()
		require.NotNil(t, sc.LivenessProbe, "the sidecar has a liveness probe on the process")
		for kind, p := range sidecarProbes(sc) {
			require.NotNil(t, p.HTTPGet, kind)
			require.NotEqual(t, "/healthz", p.HTTPGet.Path, "%s probe on /healthz: etcd away would restart or unroute every replica", kind)
			require.NotEqual(t, "/readyz", p.HTTPGet.Path, "%s probe on /readyz: only the leader would be ready (the variant in docs/sidecar.md)", kind)
			rec := httptest.NewRecorder()
			api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p.HTTPGet.Path, nil))
			require.Equal(t, http.StatusOK, rec.Code, "%s probe %s must answer 200 while etcd is away: %s", kind, p.HTTPGet.Path, rec.Body)
		}
		require.NotNil(t, app.ReadinessProbe, "the application's own readiness")
		require.NotNil(t, app.ReadinessProbe.HTTPGet)
		_, onApp := containerPort([]corev1.Container{*app}, app.ReadinessProbe.HTTPGet.Port)
		require.True(t, onApp, "the application's readiness is on its own port, not the sidecar's")
		_, onSidecar := containerPort([]corev1.Container{*sc}, app.ReadinessProbe.HTTPGet.Port)
		require.False(t, onSidecar)
	})
}

// The native form runs the sidecar as an init container with
// restartPolicy Always and holds the application back until it serves;
// the classic form has it among the containers.
func TestSidecarNativeForm(t *testing.T) {
	forms := sidecarDeployments(t)
	native := forms["native"].Spec.Template.Spec
	require.Len(t, native.InitContainers, 1)
	sc := native.InitContainers[0]
	require.Equal(t, "sidecar", sc.Args[0])
	require.NotNil(t, sc.RestartPolicy, "an init container without restartPolicy: Always blocks the pod until it exits")
	require.Equal(t, corev1.ContainerRestartPolicyAlways, *sc.RestartPolicy)
	require.NotNil(t, sc.StartupProbe, "the application starts once the sidecar serves")
	classic := forms["classic"].Spec.Template.Spec
	require.Empty(t, classic.InitContainers)
	csc, _ := sidecarPod(t, forms["classic"])
	require.Nil(t, csc.RestartPolicy)
}

// Replicas spread over nodes: a topology spread constraint on the
// hostname, or a pod anti-affinity by hostname, that selects the pods.
func TestSidecarReplicasSpreadOverNodes(t *testing.T) {
	forEachForm(t, func(t *testing.T, d *appsv1.Deployment, _, _ *corev1.Container) {
		spec := d.Spec.Template.Spec
		labels := d.Spec.Template.Labels
		matches := func(m map[string]string) bool {
			for k, v := range m {
				if labels[k] != v {
					return false
				}
			}
			return len(m) > 0
		}
		spread := false
		for _, c := range spec.TopologySpreadConstraints {
			spread = spread || (c.TopologyKey == "kubernetes.io/hostname" && c.MaxSkew == 1 &&
				c.LabelSelector != nil && matches(c.LabelSelector.MatchLabels))
		}
		if a := spec.Affinity; a != nil && a.PodAntiAffinity != nil {
			for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				spread = spread || (term.TopologyKey == "kubernetes.io/hostname" && term.LabelSelector != nil && matches(term.LabelSelector.MatchLabels))
			}
			for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
				spread = spread || (w.PodAffinityTerm.TopologyKey == "kubernetes.io/hostname" && w.PodAffinityTerm.LabelSelector != nil &&
					matches(w.PodAffinityTerm.LabelSelector.MatchLabels))
			}
		}
		require.True(t, spread, "no topology spread or anti-affinity by hostname selecting the pods")
	})
}

// Every container has a memory limit (a CPU limit is left out on purpose:
// throttling delays keepalives; see the manifests' comments).
func TestSidecarManifestLimits(t *testing.T) {
	forEachForm(t, func(t *testing.T, d *appsv1.Deployment, sc, app *corev1.Container) {
		for _, c := range []*corev1.Container{sc, app} {
			lim := c.Resources.Limits.Memory()
			require.False(t, lim.IsZero(), "container %s: a memory limit", c.Name)
			require.GreaterOrEqual(t, lim.Cmp(*c.Resources.Requests.Memory()), 0, "container %s: the limit is not below the request", c.Name)
		}
	})
}

// The preStop hook hands over to the best other candidate, in exec form
// (the image has neither a shell nor curl).
func TestSidecarPreStopResignsToBest(t *testing.T) {
	forEachForm(t, func(t *testing.T, _ *appsv1.Deployment, sc, _ *corev1.Container) {
		pre := preStopResign(t, sc)
		require.Equal(t, sidecar.ResignToBest, pre["to"], "preStop: coordctl sidecar resign --to best")
		for _, a := range sc.Lifecycle.PreStop.Exec.Command {
			require.NotContains(t, []string{"sh", "/bin/sh", "curl"}, a, "no shell, no curl in the image")
		}
	})
}

// The election is coordinated, so that a rolling update moves leadership
// once: --policy newest-version with --version the application's image
// tag, or --policy priority with a --priority.
func TestSidecarCoordinatedPolicy(t *testing.T) {
	forEachForm(t, func(t *testing.T, _ *appsv1.Deployment, sc, app *corev1.Container) {
		flags := parseFlags(sc.Args[1:])
		policy, err := election.ParsePolicy(flags["policy"])
		require.NoError(t, err)
		switch policy {
		case election.PolicyNewestVersion:
			_, tag, ok := strings.Cut(app.Image[strings.LastIndex(app.Image, "/")+1:], ":")
			require.True(t, ok, "the application's image %s has a tag", app.Image)
			require.Equal(t, tag, flags["version"], "--version is the application's image tag")
			require.True(t, election.ValidVersion(flags["version"]))
		case election.PolicyPriority:
			require.Contains(t, flags, "priority")
		default:
			t.Fatalf("--policy %q: first-come moves leadership once per replaced leader in a rollout", flags["policy"])
		}
	})
}
