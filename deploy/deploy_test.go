package deploy

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	livePath  = "/v2/health/live"
	readyPath = "/v2/health/ready"

	// KServe's conventions for a runtime's container: HTTP on 8080, gRPC
	// on 9000 (an InferenceService names it with ports: [{name: h2c}]),
	// the model repository at /mnt/models.
	kserveHTTPPort  = 8080
	kserveGRPCPort  = 9000
	kserveModelsDir = "/mnt/models"
	// The flag serve will get for gRPC; until it exists the gRPC port of
	// the manifests is declared but not checked (the grpc subtests skip).
	grpcFlag = "grpc-addr"
)

// server is what a manifest promises about one serve container.
type server struct {
	where    string // manifest file and container, for messages
	c        *container
	pod      securityContext // the pod's security context
	httpPort int
	grpcPort int    // 0 when the manifest declares none
	models   string // where the model repository is mounted
	exposed  bool   // the ports must be the image's EXPOSEd ones
	metrics  string // the path a Prometheus annotation scrapes
	// name is what KServe puts for {{.Name}} in the container's settings
	// (the InferenceService's name); "" outside KServe.
	name string
}

func TestDeployment(t *testing.T) {
	m := loadManifests(t)
	img := readDockerfile(t)
	d := one[deployment](t, m)
	where := m.fileOf(d)
	spec := &d.Spec.Template.Spec

	if d.Spec.Replicas != nil {
		t.Errorf("%s: replicas is set; the HorizontalPodAutoscaler owns the count and every apply would reset it", where)
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Metadata.Labels[k] != v {
			t.Errorf("%s: selector %s=%s does not match the pod template's labels %v", where, k, v, d.Spec.Template.Metadata.Labels)
		}
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", where, len(spec.Containers))
	}
	c := &spec.Containers[0]
	s := server{where: where + " container " + c.Name, c: c, pod: spec.SecurityContext, exposed: true}
	s.httpPort = containerPort(t, s.where, c, "http")
	if hasPort(c, "grpc") {
		s.grpcPort = containerPort(t, s.where, c, "grpc")
	}
	ann := d.Spec.Template.Metadata.Annotations
	if ann["prometheus.io/scrape"] == "true" {
		if ann["prometheus.io/port"] != strconv.Itoa(s.httpPort) {
			t.Errorf("%s: prometheus.io/port %q, want the HTTP port %d", where, ann["prometheus.io/port"], s.httpPort)
		}
		s.metrics = ann["prometheus.io/path"]
	}

	// The models volume: a PersistentVolumeClaim defined here, mounted
	// read-only.
	claims := claimNames(m)
	for _, vm := range c.VolumeMounts {
		i := slices.IndexFunc(spec.Volumes, func(v volume) bool { return v.Name == vm.Name })
		if i < 0 {
			t.Errorf("%s: volumeMount %s names no volume", s.where, vm.Name)
			continue
		}
		v := spec.Volumes[i]
		if v.PersistentVolumeClaim == nil {
			continue
		}
		if s.models != "" {
			t.Errorf("%s: two model volumes (%s and %s)", s.where, s.models, vm.MountPath)
		}
		s.models = vm.MountPath
		if !vm.ReadOnly || !v.PersistentVolumeClaim.ReadOnly {
			t.Errorf("%s: the models volume %s is not mounted read-only", s.where, vm.Name)
		}
		if !claims[v.PersistentVolumeClaim.ClaimName] {
			t.Errorf("%s: claim %q is no PersistentVolumeClaim of deploy/ (have %v)", s.where, v.PersistentVolumeClaim.ClaimName, claims)
		}
	}
	if s.models == "" {
		t.Errorf("%s: no models volume (a PersistentVolumeClaim mount)", s.where)
	}
	flags := checkServer(t, m, img, s)

	// SIGTERM drains (--drain-delay, once serve has it) and then finishes
	// the requests in flight (--shutdown-timeout; 30 s built in before it):
	// the pod must be given that long before SIGKILL.
	grace := 30 * time.Second
	if spec.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	}
	need := time.Duration(0)
	_, known, _ := serveBinary(t)
	for _, name := range []string{"drain-delay", "shutdown-timeout"} {
		if f, ok := known[name]; ok {
			v := flags[name]
			if v == "" {
				v = f.def
			}
			dur, err := time.ParseDuration(v)
			if err != nil {
				t.Errorf("%s: --%s %q: %v", s.where, name, v, err)
			}
			need += dur
		}
	}
	if _, ok := known["shutdown-timeout"]; !ok {
		need += 30 * time.Second
	}
	if grace < need {
		t.Errorf("%s: terminationGracePeriodSeconds %v is shorter than serve's drain and shutdown (%v)", where, grace, need)
	}
}

func TestService(t *testing.T) {
	m := loadManifests(t)
	d := one[deployment](t, m)
	svc := one[service](t, m)
	where := m.fileOf(svc)
	if len(svc.Spec.Selector) == 0 {
		t.Fatalf("%s: no selector", where)
	}
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Metadata.Labels[k] != v {
			t.Errorf("%s: selector %s=%s selects no pod of the Deployment (labels %v)", where, k, v, d.Spec.Template.Metadata.Labels)
		}
	}
	c := &d.Spec.Template.Spec.Containers[0]
	targets := map[string]int{}
	for _, p := range svc.Spec.Ports {
		port, ok := resolvePort(c, p.TargetPort)
		if !ok {
			t.Errorf("%s: port %s targets %v, which is no container port of the Deployment", where, p.Name, p.TargetPort)
		}
		targets[p.Name] = port
	}
	for _, p := range c.Ports {
		if targets[p.Name] != p.ContainerPort {
			t.Errorf("%s: no port %s targeting the container's %s port %d (ports %v)", where, p.Name, p.Name, p.ContainerPort, targets)
		}
	}
}

func TestHorizontalPodAutoscaler(t *testing.T) {
	m := loadManifests(t)
	d := one[deployment](t, m)
	h := one[hpa](t, m)
	where := m.fileOf(h)
	ref := h.Spec.ScaleTargetRef
	if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != d.Metadata.Name {
		t.Errorf("%s: scales %s %s %s, want apps/v1 Deployment %s", where, ref.APIVersion, ref.Kind, ref.Name, d.Metadata.Name)
	}
	if h.Spec.MinReplicas < 1 || h.Spec.MaxReplicas < h.Spec.MinReplicas {
		t.Errorf("%s: replicas %d..%d", where, h.Spec.MinReplicas, h.Spec.MaxReplicas)
	}
	if len(h.Spec.Metrics) == 0 {
		t.Errorf("%s: no metrics", where)
	}
	for _, mt := range h.Spec.Metrics {
		if mt.Type != "Resource" || mt.Resource.Target.Type != "Utilization" {
			continue
		}
		// Utilization is relative to the request: without one the HPA
		// cannot compute it.
		r := mt.Resource.Name
		if _, ok := d.Spec.Template.Spec.Containers[0].Resources.Requests[r]; !ok {
			t.Errorf("%s: scales on %s utilization, but the Deployment's container requests no %s", where, r, r)
		}
		if u := mt.Resource.Target.AverageUtilization; u < 1 || u > 100 {
			t.Errorf("%s: averageUtilization %d", where, u)
		}
	}
}

func TestKServe(t *testing.T) {
	m := loadManifests(t)
	img := readDockerfile(t)
	sr := one[servingRuntime](t, m)
	where := m.fileOf(sr)
	formats := map[string]bool{}
	for _, f := range sr.Spec.SupportedModelFormats {
		formats[f.Name] = true
	}
	if !formats["onnx"] {
		t.Errorf("%s: supportedModelFormats lack onnx", where)
	}
	for _, p := range []string{"v2", "grpc-v2"} {
		if !slices.Contains(sr.Spec.ProtocolVersions, p) {
			t.Errorf("%s: protocolVersions %v lack %s", where, sr.Spec.ProtocolVersions, p)
		}
	}
	if len(sr.Spec.Containers) != 1 || sr.Spec.Containers[0].Name != "kserve-container" {
		t.Fatalf("%s: want one container named kserve-container (KServe merges the InferenceService's settings into it)", where)
	}
	c := &sr.Spec.Containers[0]
	isvc := one[inferenceService](t, m)
	s := server{where: where + " container " + c.Name, c: c, httpPort: kserveHTTPPort, grpcPort: kserveGRPCPort, models: kserveModelsDir, name: isvc.Metadata.Name}
	if p := sr.Spec.Annotations["prometheus.kserve.io/port"]; p != "" {
		if p != strconv.Itoa(kserveHTTPPort) {
			t.Errorf("%s: prometheus.kserve.io/port %s, want the HTTP port %d", where, p, kserveHTTPPort)
		}
		s.metrics = sr.Spec.Annotations["prometheus.kserve.io/path"]
	}
	flags := checkServer(t, m, img, s)
	// KServe mounts one model at /mnt/models: the runtime names it after
	// the InferenceService, and, as a large model may load for longer than
	// liveness waits, checks liveness only once the server listens.
	if flags["model-name"] != "{{.Name}}" {
		t.Errorf("%s: --model-name is %q, want {{.Name}} (the InferenceService's name)", where, flags["model-name"])
	}
	if c.StartupProbe == nil {
		t.Errorf("%s: no startupProbe", where)
	}

	iwhere := m.fileOf(isvc)
	model := isvc.Spec.Predictor.Model
	if model.Runtime != sr.Metadata.Name {
		t.Errorf("%s: runtime %q, want the ServingRuntime %q", iwhere, model.Runtime, sr.Metadata.Name)
	}
	if !formats[model.ModelFormat.Name] {
		t.Errorf("%s: modelFormat %q is not one the runtime supports", iwhere, model.ModelFormat.Name)
	}
	if model.ProtocolVersion != "v2" {
		t.Errorf("%s: protocolVersion %q, want v2", iwhere, model.ProtocolVersion)
	}
	u, err := url.Parse(model.StorageURI)
	if err != nil || !slices.Contains([]string{"pvc", "s3", "gs", "hdfs", "webhdfs", "oci"}, u.Scheme) {
		t.Errorf("%s: storageUri %q is not a KServe storage URI of a model repository", iwhere, model.StorageURI)
	} else if u.Scheme == "pvc" && !claimNames(m)[u.Host] {
		t.Errorf("%s: storageUri %q names no PersistentVolumeClaim of deploy/", iwhere, model.StorageURI)
	}
	if p := isvc.Spec.Predictor; p.MinReplicas != nil && p.MaxReplicas < *p.MinReplicas {
		t.Errorf("%s: replicas %d..%d", iwhere, *p.MinReplicas, p.MaxReplicas)
	}
}

// TestImages checks that every serve container runs the same image, the
// one the kustomizations rewrite, with a tag that is not latest.
func TestImages(t *testing.T) {
	m := loadManifests(t)
	var images []string
	for _, d := range all[deployment](m) {
		for _, c := range d.Spec.Template.Spec.Containers {
			images = append(images, c.Image)
		}
	}
	for _, sr := range all[servingRuntime](m) {
		for _, c := range sr.Spec.Containers {
			images = append(images, c.Image)
		}
	}
	images = slices.Compact(slices.Sorted(slices.Values(images)))
	if len(images) != 1 {
		t.Fatalf("serve containers run %v, want one image", images)
	}
	ref := images[0]
	name, tag := ref, ""
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		name, tag = ref[:i], ref[i+1:]
	}
	if name[strings.LastIndex(name, "/")+1:] != "quantserve" || tag == "" || tag == "latest" {
		t.Errorf("image %q: want quantserve with a pinned tag (not latest: Kubernetes would pull it on every start)", ref)
	}
	for _, d := range m.docs {
		k, ok := d.obj.(*kustomization)
		if !ok {
			continue
		}
		if !k.rewrites(name) {
			t.Errorf("%s: images has no entry for %s, so kustomize edit set image cannot point it at a registry", d.file, name)
		}
	}
}

var quantityRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$`)

// checkServer checks one serve container against the image and serve's
// flags, then runs serve with the container's settings and asks its probe
// (and metrics) paths. It returns the flags the container sets.
func checkServer(t *testing.T, m *manifests, img image, s server) map[string]string {
	t.Helper()
	c := s.c
	_, known, repo := serveBinary(t)

	if c.Command != nil && !slices.Equal(c.Command, img.entrypoint) {
		t.Errorf("%s: command %q replaces the image's entrypoint %q", s.where, c.Command, img.entrypoint)
	}

	// The flags the container sets: the image's environment, then the
	// container's, then its arguments (serve: a flag given wins).
	flags := map[string]string{}
	pending := map[string]string{}
	set := func(origin, name, value string) {
		if name == "version" {
			t.Errorf("%s: %s: --version only prints the version", s.where, origin)
			return
		}
		if _, ok := known[name]; !ok {
			if name == grpcFlag {
				pending[name] = value
				return
			}
			t.Errorf("%s: %s sets --%s, which serve does not have", s.where, origin, name)
			return
		}
		flags[name] = value
	}
	for k, v := range img.env {
		if name, ok := envTwin(k); ok {
			set("the Dockerfile's ENV "+k, name, v)
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			t.Errorf("%s: env %s uses valueFrom, which this test cannot check", s.where, e.Name)
			continue
		}
		if name, ok := envTwin(e.Name); ok {
			set("env "+e.Name, name, e.Value)
		}
	}
	for i := 0; i < len(c.Args); i++ {
		a := c.Args[i]
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			t.Errorf("%s: argument %q is not a flag (serve takes no arguments)", s.where, a)
			continue
		}
		if f, ok := known[name]; ok && !hasValue && f.typ != "bool" && i+1 < len(c.Args) {
			i++
			value = c.Args[i]
		}
		set("argument "+a, name, value)
	}
	value := func(name string) string {
		if v, ok := flags[name]; ok {
			return v
		}
		return known[name].def
	}

	// Ports and the model repository, as serve will see them.
	if p := portOf(t, s.where, "--addr", value("addr")); p != s.httpPort {
		t.Errorf("%s: serve listens on %d (--addr %q), the manifest says HTTP is on %d", s.where, p, value("addr"), s.httpPort)
	}
	if s.exposed && !slices.Contains(img.expose, s.httpPort) {
		t.Errorf("%s: HTTP port %d is not one the Dockerfile EXPOSEs (%v)", s.where, s.httpPort, img.expose)
	}
	t.Run("grpc", func(t *testing.T) {
		if _, ok := known[grpcFlag]; !ok {
			t.Skipf("serve has no --%s yet: the gRPC port %d (%s) is declared, not checked", grpcFlag, s.grpcPort, s.where)
		}
		if s.grpcPort == 0 {
			t.Fatalf("%s: serve has --%s, the manifest declares no gRPC port", s.where, grpcFlag)
		}
		if p := portOf(t, s.where, "--"+grpcFlag, value(grpcFlag)); p != s.grpcPort {
			t.Errorf("%s: serve listens for gRPC on %d (--%s %q), the manifest says %d", s.where, p, grpcFlag, value(grpcFlag), s.grpcPort)
		}
		if s.exposed && !slices.Contains(img.expose, s.grpcPort) {
			t.Errorf("%s: gRPC port %d is not one the Dockerfile EXPOSEs (%v)", s.where, s.grpcPort, img.expose)
		}
	})
	if v := value("model-repository"); v != s.models {
		t.Errorf("%s: serve reads models from %q (--model-repository), the manifest mounts them at %q", s.where, v, s.models)
	}

	// Probes: on the HTTP port, the Open Inference Protocol's health paths.
	probes := []struct {
		kind string
		p    *probe
		path string
	}{{"livenessProbe", c.LivenessProbe, livePath}, {"readinessProbe", c.ReadinessProbe, readyPath}, {"startupProbe", c.StartupProbe, livePath}}
	for _, pr := range probes {
		if pr.p == nil {
			if pr.kind != "startupProbe" {
				t.Errorf("%s: no %s", s.where, pr.kind)
			}
			continue
		}
		if pr.p.HTTPGet == nil {
			t.Errorf("%s: %s is not an httpGet probe", s.where, pr.kind)
			continue
		}
		if pr.p.HTTPGet.Path != pr.path {
			t.Errorf("%s: %s path %q, want %q", s.where, pr.kind, pr.p.HTTPGet.Path, pr.path)
		}
		if port, ok := resolvePort(c, pr.p.HTTPGet.Port); !ok || port != s.httpPort {
			t.Errorf("%s: %s port %v is not the HTTP port %d", s.where, pr.kind, pr.p.HTTPGet.Port, s.httpPort)
		}
	}

	// Non-root (the image's numeric user), nothing written to the image,
	// no privileges.
	sc := merge(s.pod, c.SecurityContext)
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("%s: runAsNonRoot is not true", s.where)
	}
	if sc.RunAsUser != nil && *sc.RunAsUser != img.uid {
		t.Errorf("%s: runAsUser %d, the image's USER is %s", s.where, *sc.RunAsUser, img.user)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: readOnlyRootFilesystem is not true", s.where)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s: allowPrivilegeEscalation is not false", s.where)
	}
	if !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("%s: capabilities do not drop ALL", s.where)
	}
	for _, r := range []struct {
		kind string
		m    map[string]string
		keys []string
	}{{"requests", c.Resources.Requests, []string{"cpu", "memory"}}, {"limits", c.Resources.Limits, []string{"memory"}}} {
		for _, k := range r.keys {
			if !quantityRE.MatchString(r.m[k]) {
				t.Errorf("%s: resources.%s.%s %q is not a quantity", s.where, r.kind, k, r.m[k])
			}
		}
	}

	// Run serve as the container would (its model repository replaced by
	// one holding mnist, or by mnist's one version when the container names
	// its single model) and ask the paths the cluster will ask, once the
	// model has loaded.
	run := map[string]string{}
	for k, v := range flags {
		run[k] = strings.ReplaceAll(v, "{{.Name}}", s.name)
	}
	run["model-repository"] = repo
	served := "mnist"
	if name, ok := run["model-name"]; ok {
		run["model-repository"] = repo + "/mnist/1"
		served = name
	}
	srv := startServe(t, run)
	srv.waitLoaded(t)
	paths := []string{livePath, readyPath, "/v2/models/" + served + "/ready"}
	if s.metrics != "" {
		paths = append(paths, s.metrics)
	}
	for _, p := range paths {
		resp, err := http.Get(srv.base + p)
		if err != nil {
			t.Errorf("%s: GET %s: %v", s.where, p, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: GET %s = %d %s\n%s", s.where, p, resp.StatusCode, body, srv.log)
		}
		if p == s.metrics && !strings.Contains(string(body), "# TYPE ") {
			t.Errorf("%s: GET %s is not Prometheus text: %.200s", s.where, p, body)
		}
	}
	return flags
}

func merge(pod, c securityContext) securityContext {
	out := pod
	if c.RunAsNonRoot != nil {
		out.RunAsNonRoot = c.RunAsNonRoot
	}
	if c.RunAsUser != nil {
		out.RunAsUser = c.RunAsUser
	}
	if c.RunAsGroup != nil {
		out.RunAsGroup = c.RunAsGroup
	}
	out.AllowPrivilegeEscalation = c.AllowPrivilegeEscalation
	out.ReadOnlyRootFilesystem = c.ReadOnlyRootFilesystem
	out.Capabilities = c.Capabilities
	if c.SeccompProfile != nil {
		out.SeccompProfile = c.SeccompProfile
	}
	return out
}

func portOf(t *testing.T, where, flag, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Errorf("%s: %s %q: %v", where, flag, addr, err)
		return -1
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Errorf("%s: %s %q: the port is not a number", where, flag, addr)
		return -1
	}
	return n
}

func hasPort(c *container, name string) bool {
	_, ok := resolvePort(c, name)
	return ok
}

func containerPort(t *testing.T, where string, c *container, name string) int {
	t.Helper()
	p, ok := resolvePort(c, name)
	if !ok {
		t.Fatalf("%s: no container port named %s", where, name)
	}
	return p
}

// resolvePort returns the container port a probe or a Service names: a
// number, or the name of one of the container's ports.
func resolvePort(c *container, port any) (int, bool) {
	switch p := port.(type) {
	case int:
		if len(c.Ports) == 0 {
			return p, true // nothing declared (KServe): the number stands
		}
		for _, cp := range c.Ports {
			if cp.ContainerPort == p {
				return p, true
			}
		}
	case string:
		for _, cp := range c.Ports {
			if cp.Name == p {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}

func claimNames(m *manifests) map[string]bool {
	out := map[string]bool{}
	for _, p := range all[pvc](m) {
		out[p.Metadata.Name] = true
	}
	return out
}
