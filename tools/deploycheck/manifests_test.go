package deploycheck

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// KServe's resources, reduced to the fields of its API
// (serving.kserve.io) the manifests use; their containers are the
// Kubernetes API's.

type servingRuntime struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Annotations           map[string]string `json:"annotations"`
		SupportedModelFormats []struct {
			Name       string `json:"name"`
			Version    string `json:"version"`
			AutoSelect *bool  `json:"autoSelect"`
			Priority   *int32 `json:"priority"`
		} `json:"supportedModelFormats"`
		ProtocolVersions []string           `json:"protocolVersions"`
		Containers       []corev1.Container `json:"containers"`
	} `json:"spec"`
}

type inferenceService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Predictor struct {
			MinReplicas *int32 `json:"minReplicas"`
			MaxReplicas int32  `json:"maxReplicas"`
			Model       struct {
				Runtime     string `json:"runtime"`
				ModelFormat struct {
					Name    string `json:"name"`
					Version string `json:"version"`
				} `json:"modelFormat"`
				ProtocolVersion string `json:"protocolVersion"`
				StorageURI      string `json:"storageUri"`
			} `json:"model"`
		} `json:"predictor"`
	} `json:"spec"`
}

type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// kinds maps apiVersion and kind to the type a document decodes into.
var kinds = map[string]func() any{
	"apps/v1 Deployment":                            func() any { return new(appsv1.Deployment) },
	"v1 Pod":                                        func() any { return new(corev1.Pod) },
	"v1 Service":                                    func() any { return new(corev1.Service) },
	"v1 PersistentVolumeClaim":                      func() any { return new(corev1.PersistentVolumeClaim) },
	"autoscaling/v2 HorizontalPodAutoscaler":        func() any { return new(autoscalingv2.HorizontalPodAutoscaler) },
	"serving.kserve.io/v1alpha1 ServingRuntime":     func() any { return new(servingRuntime) },
	"serving.kserve.io/v1beta1 InferenceService":    func() any { return new(inferenceService) },
	"kustomize.config.k8s.io/v1beta1 Kustomization": func() any { return new(kustomization) },
}

// decode decodes one YAML document strictly into the type of its kind.
func decode(doc []byte) (any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	newObj, ok := kinds[tm.APIVersion+" "+tm.Kind]
	if !ok {
		return nil, &unknownKind{tm.APIVersion, tm.Kind}
	}
	obj := newObj()
	return obj, yaml.UnmarshalStrict(doc, obj)
}

type unknownKind struct{ apiVersion, kind string }

func (e *unknownKind) Error() string {
	return e.apiVersion + " " + e.kind + " is not a kind this test checks"
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }

// documents splits a YAML file into its documents.
func documents(data []byte) [][]byte {
	var docs [][]byte
	for _, d := range bytes.Split(data, []byte("\n---")) {
		if len(bytes.TrimSpace(d)) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

// TestManifestsDecodeStrictly decodes every document under deploy/ into
// the Kubernetes (or KServe) type of its kind, failing on any field the
// type lacks.
func TestManifestsDecodeStrictly(t *testing.T) {
	files, err := filepath.Glob("../../deploy/*/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests under ../../deploy: %v", err)
	}
	counts := map[string]int{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range documents(data) {
			obj, err := decode(doc)
			if err != nil {
				t.Errorf("%s document %d: %v", file, i, err)
				continue
			}
			counts[strings.TrimPrefix(strings.TrimPrefix(typeName(obj), "*"), "deploycheck.")]++
		}
	}
	for _, want := range []string{"v1.Deployment", "v1.Service", "v2.HorizontalPodAutoscaler", "servingRuntime", "inferenceService"} {
		if counts[want] == 0 {
			t.Errorf("no %s among the manifests (decoded: %v)", want, counts)
		}
	}
}

// TestStrictDecodingRefuses: what a loose decoding accepted (fsGroup, a
// pod-level field, in a container's securityContext; a misspelt probe)
// fails here.
func TestStrictDecodingRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"fsGroup in a container": `apiVersion: apps/v1
kind: Deployment
metadata: {name: x}
spec:
  template:
    spec:
      containers:
        - name: serve
          securityContext:
            fsGroup: 65532
`,
		"readinesProbe": `apiVersion: serving.kserve.io/v1alpha1
kind: ServingRuntime
metadata: {name: x}
spec:
  containers:
    - name: kserve-container
      readinesProbe:
        httpGet: {path: /v2/health/ready, port: 8080}
`,
	} {
		if _, err := decode([]byte(doc)); err == nil || !strings.Contains(err.Error(), "unknown field") {
			t.Errorf("%s: %v, want an unknown field refused", name, err)
		}
	}
	// The same documents, fixed, decode.
	ok := `apiVersion: apps/v1
kind: Deployment
metadata: {name: x}
spec:
  template:
    spec:
      securityContext:
        fsGroup: 65532
      containers:
        - name: serve
`
	if _, err := decode([]byte(ok)); err != nil {
		t.Errorf("fsGroup in the pod's securityContext: %v", err)
	}
}
