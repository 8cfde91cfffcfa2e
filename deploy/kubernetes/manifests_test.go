package kubernetes

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/coordkit/coordkit/internal/image"
	"github.com/coordkit/coordkit/internal/sidecar"
)

// objects are the decoded manifests of this directory.
type objects struct {
	deployments  []*appsv1.Deployment
	statefulSets []*appsv1.StatefulSet
	services     []*corev1.Service
	pdbs         []*policyv1.PodDisruptionBudget
	cronJobs     []*batchv1.CronJob
	claims       []*corev1.PersistentVolumeClaim
	configMaps   []*corev1.ConfigMap
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

// load decodes every document of every *.yaml strictly: an unknown or
// misspelt field, or a kind this test does not know, fails.
func load(t *testing.T) objects {
	t.Helper()
	var all objects
	for _, o := range loadFiles(t) {
		all.deployments = append(all.deployments, o.deployments...)
		all.statefulSets = append(all.statefulSets, o.statefulSets...)
		all.services = append(all.services, o.services...)
		all.pdbs = append(all.pdbs, o.pdbs...)
		all.cronJobs = append(all.cronJobs, o.cronJobs...)
		all.claims = append(all.claims, o.claims...)
		all.configMaps = append(all.configMaps, o.configMaps...)
	}
	return all
}

// loadFiles is load by file: each file is applied as a unit
// (sidecar.yaml and sidecar-native.yaml are two forms of one service).
func loadFiles(t *testing.T) map[string]objects {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	byFile := map[string]objects{}
	for _, f := range files {
		var o objects
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for i, doc := range docSep.Split(string(b), -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			var tm metav1.TypeMeta
			require.NoError(t, yaml.Unmarshal([]byte(doc), &tm), "%s #%d", f, i)
			var obj any
			switch tm.APIVersion + " " + tm.Kind {
			case "apps/v1 Deployment":
				obj = decodeInto(&o.deployments)
			case "apps/v1 StatefulSet":
				obj = decodeInto(&o.statefulSets)
			case "v1 Service":
				obj = decodeInto(&o.services)
			case "policy/v1 PodDisruptionBudget":
				obj = decodeInto(&o.pdbs)
			case "batch/v1 CronJob":
				obj = decodeInto(&o.cronJobs)
			case "v1 PersistentVolumeClaim":
				obj = decodeInto(&o.claims)
			case "v1 ConfigMap":
				obj = decodeInto(&o.configMaps)
			default:
				t.Fatalf("%s #%d: kind %s %s is not checked by this test: add it", f, i, tm.APIVersion, tm.Kind)
			}
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), obj), "%s #%d (%s)", f, i, tm.Kind)
		}
		byFile[f] = o
	}
	return byFile
}

// decodeInto appends a new object to list and returns it, for the decoder
// to fill.
func decodeInto[T any](list *[]*T) *T {
	v := new(T)
	*list = append(*list, v)
	return v
}

func stripComments(doc string) string {
	var out []string
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// workload is a pod template with the selector that owns it.
type workload struct {
	name     string
	selector *metav1.LabelSelector
	tmpl     corev1.PodTemplateSpec
	claims   []string // volumeClaimTemplates
}

func (o objects) workloads() []workload {
	var ws []workload
	for _, d := range o.deployments {
		ws = append(ws, workload{name: "Deployment " + d.Name, selector: d.Spec.Selector, tmpl: d.Spec.Template})
	}
	for _, s := range o.statefulSets {
		w := workload{name: "StatefulSet " + s.Name, selector: s.Spec.Selector, tmpl: s.Spec.Template}
		for _, c := range s.Spec.VolumeClaimTemplates {
			w.claims = append(w.claims, c.Name)
		}
		ws = append(ws, w)
	}
	for _, c := range o.cronJobs {
		// A Job's selector is generated; its pods carry the template's labels.
		tmpl := c.Spec.JobTemplate.Spec.Template
		ws = append(ws, workload{name: "CronJob " + c.Name, selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels}, tmpl: tmpl})
	}
	return ws
}

func TestManifestsDecodeStrictly(t *testing.T) {
	o := load(t)
	require.Len(t, o.deployments, 2, "sidecar.yaml and sidecar-native.yaml")
	require.Len(t, o.statefulSets, 1)
	require.Len(t, o.pdbs, 3)
	require.Len(t, o.cronJobs, 1)

	// A misspelt field is refused: the decoding is really strict.
	var d appsv1.Deployment
	require.Error(t, yaml.UnmarshalStrict([]byte("apiVersion: apps/v1\nkind: Deployment\nspec:\n  replica: 3\n"), &d))
}

func TestLabelsAndSelectorsAgree(t *testing.T) {
	for f, o := range loadFiles(t) {
		t.Run(f, func(t *testing.T) { checkLabelsAndSelectors(t, o) })
	}
}

// checkLabelsAndSelectors checks one file's objects.
func checkLabelsAndSelectors(t *testing.T, o objects) {
	ws := o.workloads()
	for _, w := range ws {
		sel, err := metav1.LabelSelectorAsSelector(w.selector)
		require.NoError(t, err, w.name)
		require.False(t, sel.Empty(), "%s: an empty selector", w.name)
		require.True(t, sel.Matches(labels.Set(w.tmpl.Labels)), "%s: the selector does not match the pod template's labels", w.name)
	}
	selects := func(sel labels.Selector) []string {
		var names []string
		for _, w := range ws {
			if sel.Matches(labels.Set(w.tmpl.Labels)) {
				names = append(names, w.name)
			}
		}
		return names
	}
	for _, p := range o.pdbs {
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		require.NoError(t, err)
		require.Len(t, selects(sel), 1, "PodDisruptionBudget %s must cover exactly one workload", p.Name)
	}
	for _, s := range o.services {
		require.Len(t, selects(labels.SelectorFromSet(s.Spec.Selector)), 1, "Service %s must select exactly one workload", s.Name)
		for _, w := range ws {
			if !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(w.tmpl.Labels)) {
				continue
			}
			for _, sp := range s.Spec.Ports {
				_, ok := containerPort(w.tmpl.Spec.Containers, sp.TargetPort)
				require.True(t, ok, "Service %s port %s: target %s is no container port of %s", s.Name, sp.Name, sp.TargetPort.String(), w.name)
			}
		}
	}
}

func TestSecurityContextAndRequests(t *testing.T) {
	for _, w := range load(t).workloads() {
		ps := w.tmpl.Spec.SecurityContext
		require.NotNil(t, ps, w.name)
		require.True(t, ps.RunAsNonRoot != nil && *ps.RunAsNonRoot, "%s: runAsNonRoot", w.name)
		require.True(t, ps.RunAsUser != nil && *ps.RunAsUser == image.UID, "%s: runAsUser is the image's user %d", w.name, image.UID)
		require.NotNil(t, ps.SeccompProfile, w.name)
		volumes := map[string]bool{}
		for _, v := range w.tmpl.Spec.Volumes {
			volumes[v.Name] = true
		}
		for _, c := range w.claims {
			volumes[c] = true
		}
		for _, c := range slices.Concat(w.tmpl.Spec.InitContainers, w.tmpl.Spec.Containers) {
			where := w.name + " container " + c.Name
			sc := c.SecurityContext
			require.NotNil(t, sc, where)
			require.True(t, sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation, "%s: allowPrivilegeEscalation: false", where)
			require.True(t, sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem, "%s: readOnlyRootFilesystem: true", where)
			require.True(t, sc.Privileged == nil || !*sc.Privileged, where)
			require.NotNil(t, sc.Capabilities, where)
			require.Contains(t, sc.Capabilities.Drop, corev1.Capability("ALL"), where)
			require.False(t, c.Resources.Requests.Cpu().IsZero(), "%s: a CPU request", where)
			require.False(t, c.Resources.Requests.Memory().IsZero(), "%s: a memory request", where)
			for _, m := range c.VolumeMounts {
				require.True(t, volumes[m.Name], "%s mounts %s, which is no volume", where, m.Name)
			}
		}
	}
}

// TestSidecarContainerAgreesWithCoordctl checks the sidecar's args against
// what coordctl and its image do: the probes' paths are served by the
// sidecar's real API on the --listen port, the files it is told to read
// or write are on mounted volumes, the token file's volume is shared with
// the application, and preStop resigns through the same API.
func TestSidecarContainerAgreesWithCoordctl(t *testing.T) {
	o := load(t)
	for _, d := range o.deployments {
		t.Run(sidecarForm(d), func(t *testing.T) { checkSidecarContainer(t, o, d) })
	}
}

// sidecarPod finds, in d's pod, the container that runs 'coordctl
// sidecar' (a container or a native sidecar among the init containers)
// and the application's.
func sidecarPod(t *testing.T, d *appsv1.Deployment) (sc, app *corev1.Container) {
	t.Helper()
	spec := &d.Spec.Template.Spec
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			if c := &cs[i]; len(c.Args) > 0 && c.Args[0] == "sidecar" {
				sc = c
			} else {
				app = c
			}
		}
	}
	require.NotNil(t, sc, "a container running 'coordctl sidecar'")
	require.NotNil(t, app, "an application container")
	return sc, app
}

// sidecarForm names d's form: native (an init container with
// restartPolicy Always) or classic.
func sidecarForm(d *appsv1.Deployment) string {
	if len(d.Spec.Template.Spec.InitContainers) > 0 {
		return "native"
	}
	return "classic"
}

func checkSidecarContainer(t *testing.T, o objects, d *appsv1.Deployment) {
	spec := d.Spec.Template.Spec
	sc, app := sidecarPod(t, d)
	require.Empty(t, sc.Command, "the image's entrypoint is coordctl (%s)", image.BinaryPath)
	flags := parseFlags(sc.Args[1:])
	for _, f := range []string{"election", "id", "listen", "api-token-file", "token-file", "endpoints"} {
		require.Contains(t, flags, f, "sidecar --%s", f)
	}

	_, portStr, err := splitListen(flags["listen"])
	require.NoError(t, err)
	listenPort, err := strconv.Atoi(portStr)
	require.NoError(t, err)
	require.NotZero(t, listenPort, "a fixed --listen port: the probes name it")

	// The real API, to see that every probed path exists.
	api := sidecar.NewAPI(sidecar.APIConfig{Tracker: sidecar.NewTracker("e", "e/", "a", nil)})
	defer api.Close()
	require.NotNil(t, sc.LivenessProbe, "liveness probe")
	for kind, p := range sidecarProbes(sc) {
		require.NotNil(t, p.HTTPGet, "%s probe is an HTTP GET", kind)
		port, ok := containerPort([]corev1.Container{*sc}, p.HTTPGet.Port)
		require.True(t, ok, "%s probe port %s is a port of the sidecar container", kind, p.HTTPGet.Port.String())
		require.Equal(t, listenPort, port, "%s probe port vs --listen %s", kind, flags["listen"])
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p.HTTPGet.Path, nil))
		require.NotEqual(t, http.StatusNotFound, rec.Code, "%s probe path %s is not served by the sidecar", kind, p.HTTPGet.Path)
		require.NotEqual(t, http.StatusMethodNotAllowed, rec.Code, "%s probe path %s", kind, p.HTTPGet.Path)
	}

	// Files the sidecar reads or writes are on its volumes.
	for _, f := range []string{"api-token-file", "token-file", "cacert", "cert", "key"} {
		if p, ok := flags[f]; ok {
			_, ok := mountOf(*sc, p)
			require.True(t, ok, "--%s %s is on no volume of the sidecar (the root file system is read-only)", f, p)
		}
	}
	tmp, ok := mountOf(*sc, "/tmp/x")
	require.True(t, ok && tmp.MountPath == "/tmp", "a writable /tmp")

	// The token file's volume is shared: the sidecar writes, the app reads
	// the same file through its own mount.
	m, _ := mountOf(*sc, flags["token-file"])
	require.False(t, m.ReadOnly, "the sidecar writes the token file")
	rel := strings.TrimPrefix(flags["token-file"], m.MountPath)
	var appMount *corev1.VolumeMount
	for i := range app.VolumeMounts {
		if app.VolumeMounts[i].Name == m.Name {
			appMount = &app.VolumeMounts[i]
		}
	}
	require.NotNil(t, appMount, "the app mounts volume %s, where the sidecar writes the token", m.Name)
	appPath := path.Join(appMount.MountPath, rel)
	found := false
	for _, e := range app.Env {
		found = found || e.Value == appPath
	}
	require.True(t, found, "the app is told where the token file is (%s)", appPath)

	// preStop: coordctl sidecar resign against the same API and token.
	pre := preStopResign(t, sc)
	require.Equal(t, flags["api-token-file"], pre["api-token-file"], "preStop sends the token the sidecar requires")
	u, err := url.Parse(pre["url"])
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(listenPort), u.Port(), "preStop --url vs --listen")
	require.True(t, u.Hostname() == "127.0.0.1" || u.Hostname() == "localhost", "preStop talks to its own pod's sidecar")
	require.Greater(t, *spec.TerminationGracePeriodSeconds, int64(10), "room for the resignation and --kill-grace")

	// The sidecar's etcd endpoints are the StatefulSet's members.
	sts := o.statefulSets[0]
	for i, ep := range strings.Split(flags["endpoints"], ",") {
		u, err := url.Parse(ep)
		require.NoError(t, err)
		require.Equal(t, "https", u.Scheme, "TLS to etcd")
		require.Equal(t, sts.Name+"-"+strconv.Itoa(i)+"."+sts.Spec.ServiceName, u.Hostname())
		port, ok := containerPort(sts.Spec.Template.Spec.Containers, intstr.FromString("client"))
		require.True(t, ok)
		require.Equal(t, strconv.Itoa(port), u.Port())
	}
}

func TestEtcdStatefulSet(t *testing.T) {
	o := load(t)
	sts := o.statefulSets[0]
	require.Equal(t, int32(3), *sts.Spec.Replicas)
	var headless *corev1.Service
	for _, s := range o.services {
		if s.Name == sts.Spec.ServiceName {
			headless = s
		}
	}
	require.NotNil(t, headless, "serviceName %s names a Service", sts.Spec.ServiceName)
	require.Equal(t, corev1.ClusterIPNone, headless.Spec.ClusterIP, "a headless Service gives each member its DNS name")
	require.True(t, headless.Spec.PublishNotReadyAddresses, "members find each other before they are ready")

	c := sts.Spec.Template.Spec.Containers[0]
	flags := parseFlags(c.Args)
	// Full DNS names, which resolve from any namespace: the pod's namespace
	// and the cluster domain come from the environment.
	domain := "." + sts.Spec.ServiceName + ".$(POD_NAMESPACE).svc.$(CLUSTER_DOMAIN)"
	env := envOf(c)
	require.Equal(t, "metadata.namespace", env["POD_NAMESPACE"].ValueFrom.FieldRef.FieldPath)
	require.Equal(t, "metadata.name", env["POD_NAME"].ValueFrom.FieldRef.FieldPath)
	require.Equal(t, "cluster.local", env["CLUSTER_DOMAIN"].Value)
	var members []string
	for i := 0; i < 3; i++ {
		name := sts.Name + "-" + strconv.Itoa(i)
		members = append(members, name+"=https://"+name+domain+":2380")
	}
	require.Equal(t, strings.Join(members, ","), flags["initial-cluster"])
	require.Equal(t, "https://$(POD_NAME)"+domain+":2380", flags["initial-advertise-peer-urls"])
	require.Equal(t, "https://$(POD_NAME)"+domain+":2379", flags["advertise-client-urls"])

	// --initial-cluster-state is the operator's value, from a ConfigMap
	// (docs/operations.md: "new" at the first start, then "existing").
	require.Equal(t, "$(ETCD_INITIAL_CLUSTER_STATE)", flags["initial-cluster-state"])
	require.Len(t, c.EnvFrom, 1)
	require.NotNil(t, c.EnvFrom[0].ConfigMapRef)
	var bootstrap *corev1.ConfigMap
	for _, cm := range o.configMaps {
		if cm.Name == c.EnvFrom[0].ConfigMapRef.Name {
			bootstrap = cm
		}
	}
	require.NotNil(t, bootstrap, "the ConfigMap %s is in the manifest", c.EnvFrom[0].ConfigMapRef.Name)
	require.Contains(t, []string{"new", "existing"}, bootstrap.Data["ETCD_INITIAL_CLUSTER_STATE"])
	for _, f := range []string{"listen-client-urls", "advertise-client-urls", "listen-peer-urls", "initial-advertise-peer-urls"} {
		require.True(t, strings.HasPrefix(flags[f], "https://"), "--%s is TLS", f)
	}
	require.Contains(t, flags, "client-cert-auth")
	require.Contains(t, flags, "peer-client-cert-auth")
	var tlsVol string
	for _, f := range []string{"trusted-ca-file", "cert-file", "key-file", "peer-trusted-ca-file", "peer-cert-file", "peer-key-file"} {
		m, ok := mountOf(c, flags[f])
		require.True(t, ok, "--%s %s is mounted", f, flags[f])
		tlsVol = m.Name
	}
	var secret bool
	for _, v := range sts.Spec.Template.Spec.Volumes {
		secret = secret || (v.Name == tlsVol && v.Secret != nil)
	}
	require.True(t, secret, "the TLS files come from a Secret")
	m, ok := mountOf(c, flags["data-dir"])
	require.True(t, ok)
	require.Equal(t, "data", m.Name, "the data is on the volume claim")

	metrics, err := url.Parse(flags["listen-metrics-urls"])
	require.NoError(t, err)
	for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
		require.NotNil(t, p)
		port, ok := containerPort([]corev1.Container{c}, p.HTTPGet.Port)
		require.True(t, ok)
		require.Equal(t, metrics.Port(), strconv.Itoa(port), "etcd's probes go to --listen-metrics-urls")
	}
	var pdb *policyv1.PodDisruptionBudget
	for _, p := range o.pdbs {
		if p.Name == sts.Name {
			pdb = p
		}
	}
	require.NotNil(t, pdb)
	require.Equal(t, intstr.FromInt32(2), *pdb.Spec.MinAvailable, "a quorum of three stays up")
}

func envOf(c corev1.Container) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		out[e.Name] = e
	}
	return out
}

func etcdContainer(t *testing.T, o objects) (*appsv1.StatefulSet, corev1.Container, map[string]string) {
	t.Helper()
	require.Len(t, o.statefulSets, 1)
	sts := o.statefulSets[0]
	c := sts.Spec.Template.Spec.Containers[0]
	require.Equal(t, "etcd", c.Name)
	return sts, c, parseFlags(c.Args)
}

// History is compacted and the backend has a quota the volume and the
// memory limit leave room for.
func TestEtcdCompactionAndQuota(t *testing.T) {
	o := load(t)
	sts, c, flags := etcdContainer(t, o)
	require.Equal(t, "periodic", flags["auto-compaction-mode"])
	retention, err := time.ParseDuration(flags["auto-compaction-retention"])
	require.NoError(t, err, "--auto-compaction-retention is a duration in periodic mode")
	require.GreaterOrEqual(t, retention, 5*time.Minute, "watches that resume need some history")
	require.LessOrEqual(t, retention, 24*time.Hour)

	quota, err := strconv.ParseInt(flags["quota-backend-bytes"], 10, 64)
	require.NoError(t, err, "--quota-backend-bytes is set")
	require.Positive(t, quota)
	require.LessOrEqual(t, quota, int64(8)<<30, "etcd's advice: at most 8 GiB")
	var data *corev1.PersistentVolumeClaim
	for i := range sts.Spec.VolumeClaimTemplates {
		if sts.Spec.VolumeClaimTemplates[i].Name == "data" {
			data = &sts.Spec.VolumeClaimTemplates[i]
		}
	}
	require.NotNil(t, data)
	volume := data.Spec.Resources.Requests.Storage().Value()
	require.GreaterOrEqual(t, volume, 2*quota, "room on the volume for a defragmentation's copy")
	require.Greater(t, c.Resources.Limits.Memory().Value(), quota, "etcd maps its database: the memory limit is above the quota")
}

// Members spread over nodes, and have limits.
func TestEtcdSpreadAndLimits(t *testing.T) {
	o := load(t)
	sts, c, _ := etcdContainer(t, o)
	spec := sts.Spec.Template.Spec
	// A hostname spread with maxSkew 1 would still put two members on one
	// of two nodes: only a required anti-affinity keeps them apart.
	byNode := false
	if a := spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
			require.NoError(t, err)
			byNode = byNode || (term.TopologyKey == "kubernetes.io/hostname" && sel.Matches(labels.Set(sts.Spec.Template.Labels)))
		}
	}
	require.True(t, byNode, "no two etcd members on one node: a required hostname anti-affinity on the members' labels")
	zones := false
	for _, tsc := range spec.TopologySpreadConstraints {
		zones = zones || tsc.TopologyKey == "topology.kubernetes.io/zone"
	}
	require.True(t, zones, "members spread over zones where there are some")

	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		lim, ok := c.Resources.Limits[r]
		require.True(t, ok, "etcd has a %s limit", r)
		req := c.Resources.Requests[r]
		require.GreaterOrEqual(t, lim.Cmp(req), 0, "%s limit >= request", r)
	}
}

// A CronJob snapshots etcd with etcdctl, from the members' own image, onto a
// claim the manifest creates, over TLS with the members' certificate.
func TestEtcdSnapshotCronJob(t *testing.T) {
	o := load(t)
	sts, etcd, etcdFlags := etcdContainer(t, o)
	require.Len(t, o.cronJobs, 1)
	cj := o.cronJobs[0]
	require.NotEmpty(t, cj.Spec.Schedule)
	require.Equal(t, batchv1.ForbidConcurrent, cj.Spec.ConcurrencyPolicy, "one snapshot at a time")
	// (TestLabelsAndSelectorsAgree: etcd's Service selects no snapshot pod.)
	spec := cj.Spec.JobTemplate.Spec.Template.Spec

	// The snapshot runs first (an init container), the pruning after it.
	require.Len(t, spec.InitContainers, 1)
	snap := spec.InitContainers[0]
	require.Equal(t, etcd.Image, snap.Image, "etcdctl of the members' own version")
	require.Equal(t, []string{"/usr/local/bin/etcdctl"}, snap.Command)
	require.GreaterOrEqual(t, len(snap.Args), 3)
	require.Equal(t, []string{"snapshot", "save"}, snap.Args[:2])
	file := snap.Args[2]
	flags := parseFlags(snap.Args[3:])

	// The file is on a mounted claim that exists.
	m, ok := mountOf(snap, file)
	require.True(t, ok, "%s is on a mounted volume", file)
	var claim string
	for _, v := range spec.Volumes {
		if v.Name == m.Name && v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
	}
	require.NotEmpty(t, claim, "snapshots go to a PersistentVolumeClaim, not the pod's own disk")
	var pvc *corev1.PersistentVolumeClaim
	for _, c := range o.claims {
		if c.Name == claim {
			pvc = c
		}
	}
	require.NotNil(t, pvc, "the claim %s is in the manifest", claim)
	require.GreaterOrEqual(t, pvc.Spec.Resources.Requests.Storage().Value(), int64(4)<<30)
	require.Contains(t, file, "$(JOB_NAME)", "one file per run")
	require.Equal(t, "metadata.labels['batch.kubernetes.io/job-name']", envOf(snap)["JOB_NAME"].ValueFrom.FieldRef.FieldPath)

	// One endpoint (etcdctl snapshot save takes one), the members' Service
	// by its full name, with etcd's CA and certificate.
	u, err := url.Parse(flags["endpoints"])
	require.NoError(t, err)
	require.Equal(t, "https", u.Scheme)
	require.Equal(t, sts.Spec.ServiceName+".$(POD_NAMESPACE).svc.$(CLUSTER_DOMAIN)", u.Hostname())
	port, ok := containerPort([]corev1.Container{etcd}, intstr.FromString("client"))
	require.True(t, ok)
	require.Equal(t, strconv.Itoa(port), u.Port())
	for f, etcdFlag := range map[string]string{"cacert": "trusted-ca-file", "cert": "cert-file", "key": "key-file"} {
		require.Equal(t, etcdFlags[etcdFlag], flags[f], "--%s is etcd's --%s", f, etcdFlag)
		_, ok := mountOf(snap, flags[f])
		require.True(t, ok, "--%s %s is mounted", f, flags[f])
	}

	// Pruning keeps the newest snapshots of the same claim.
	require.Len(t, spec.Containers, 1)
	prune := spec.Containers[0]
	pm, ok := mountOf(prune, file)
	require.True(t, ok)
	require.Equal(t, m.Name, pm.Name)
}

// sidecarProbes are the probes of sc that are set, by kind.
func sidecarProbes(sc *corev1.Container) map[string]*corev1.Probe {
	ps := map[string]*corev1.Probe{}
	for kind, p := range map[string]*corev1.Probe{"startup": sc.StartupProbe, "readiness": sc.ReadinessProbe, "liveness": sc.LivenessProbe} {
		if p != nil {
			ps[kind] = p
		}
	}
	return ps
}

// preStopResign checks that sc's preStop hook execs 'coordctl sidecar
// resign' and returns its flags.
func preStopResign(t *testing.T, sc *corev1.Container) map[string]string {
	t.Helper()
	require.NotNil(t, sc.Lifecycle)
	require.NotNil(t, sc.Lifecycle.PreStop)
	require.NotNil(t, sc.Lifecycle.PreStop.Exec, "preStop runs coordctl (an httpGet hook cannot POST)")
	cmd := sc.Lifecycle.PreStop.Exec.Command
	require.GreaterOrEqual(t, len(cmd), 3)
	require.Equal(t, []string{image.BinaryPath, "sidecar", "resign"}, cmd[:3], "exec form: the image has no shell")
	return parseFlags(cmd[3:])
}

// parseFlags reads --name=value and bare --name arguments.
func parseFlags(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		k, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		out[k] = v
	}
	return out
}

func splitListen(addr string) (string, string, error) {
	i := strings.LastIndex(addr, ":")
	if i < 0 {
		return "", "", strconv.ErrSyntax
	}
	return addr[:i], addr[i+1:], nil
}

// containerPort resolves a probe's or Service's port (a number or a name)
// to a container port of cs.
func containerPort(cs []corev1.Container, p intstr.IntOrString) (int, bool) {
	for _, c := range cs {
		for _, cp := range c.Ports {
			if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
				return int(cp.ContainerPort), true
			}
		}
	}
	return 0, false
}

// mountOf finds the volume mount of c at or under which file lies.
func mountOf(c corev1.Container, file string) (corev1.VolumeMount, bool) {
	for _, m := range c.VolumeMounts {
		if file == m.MountPath || strings.HasPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/") {
			return m, true
		}
	}
	return corev1.VolumeMount{}, false
}
