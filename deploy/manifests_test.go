package deploy

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The manifests' Kubernetes and KServe types, reduced to the fields they
// use. Decoding is strict: a field these types lack (a typo such as
// readinesProbe, or a field put at the wrong level) fails the test, so a
// field the manifests start using is added here first.

type meta struct {
	Name        string            `yaml:"name"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type header struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   meta   `yaml:"metadata"`
}

type deployment struct {
	header `yaml:",inline"`
	Spec   struct {
		Replicas *int `yaml:"replicas"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Strategy struct {
			Type          string `yaml:"type"`
			RollingUpdate struct {
				MaxUnavailable any `yaml:"maxUnavailable"`
				MaxSurge       any `yaml:"maxSurge"`
			} `yaml:"rollingUpdate"`
		} `yaml:"strategy"`
		Template struct {
			Metadata meta    `yaml:"metadata"`
			Spec     podSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type pod struct {
	header `yaml:",inline"`
	Spec   podSpec `yaml:"spec"`
}

type podSpec struct {
	RestartPolicy                 string          `yaml:"restartPolicy"`
	AutomountServiceAccountToken  *bool           `yaml:"automountServiceAccountToken"`
	TerminationGracePeriodSeconds *int            `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               securityContext `yaml:"securityContext"`
	Containers                    []container     `yaml:"containers"`
	Volumes                       []volume        `yaml:"volumes"`
}

type volume struct {
	Name                  string `yaml:"name"`
	PersistentVolumeClaim *struct {
		ClaimName string `yaml:"claimName"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"persistentVolumeClaim"`
}

// securityContext merges the pod's and the container's fields, as the
// Kubernetes API does when it resolves a container's settings.
type securityContext struct {
	RunAsNonRoot             *bool  `yaml:"runAsNonRoot"`
	RunAsUser                *int64 `yaml:"runAsUser"`
	RunAsGroup               *int64 `yaml:"runAsGroup"`
	FSGroup                  *int64 `yaml:"fsGroup"`
	AllowPrivilegeEscalation *bool  `yaml:"allowPrivilegeEscalation"`
	ReadOnlyRootFilesystem   *bool  `yaml:"readOnlyRootFilesystem"`
	Capabilities             struct {
		Drop []string `yaml:"drop"`
	} `yaml:"capabilities"`
	SeccompProfile *struct {
		Type string `yaml:"type"`
	} `yaml:"seccompProfile"`
}

type container struct {
	Name            string   `yaml:"name"`
	Image           string   `yaml:"image"`
	ImagePullPolicy string   `yaml:"imagePullPolicy"`
	Command         []string `yaml:"command"`
	Args            []string `yaml:"args"`
	Env             []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom any    `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
		Protocol      string `yaml:"protocol"`
	} `yaml:"ports"`
	StartupProbe   *probe `yaml:"startupProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext securityContext `yaml:"securityContext"`
	VolumeMounts    []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"` // a number or a container port's name
	} `yaml:"httpGet"`
	InitialDelaySeconds int `yaml:"initialDelaySeconds"`
	PeriodSeconds       int `yaml:"periodSeconds"`
	TimeoutSeconds      int `yaml:"timeoutSeconds"`
	FailureThreshold    int `yaml:"failureThreshold"`
}

type service struct {
	header `yaml:",inline"`
	Spec   struct {
		Type     string            `yaml:"type"`
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name        string `yaml:"name"`
			Port        int    `yaml:"port"`
			TargetPort  any    `yaml:"targetPort"`
			Protocol    string `yaml:"protocol"`
			AppProtocol string `yaml:"appProtocol"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type hpa struct {
	header `yaml:",inline"`
	Spec   struct {
		ScaleTargetRef struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string `yaml:"kind"`
			Name       string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		MinReplicas int `yaml:"minReplicas"`
		MaxReplicas int `yaml:"maxReplicas"`
		Metrics     []struct {
			Type     string `yaml:"type"`
			Resource struct {
				Name   string `yaml:"name"`
				Target struct {
					Type               string `yaml:"type"`
					AverageUtilization int    `yaml:"averageUtilization"`
				} `yaml:"target"`
			} `yaml:"resource"`
		} `yaml:"metrics"`
		Behavior struct {
			ScaleDown struct {
				StabilizationWindowSeconds int `yaml:"stabilizationWindowSeconds"`
			} `yaml:"scaleDown"`
		} `yaml:"behavior"`
	} `yaml:"spec"`
}

type pvc struct {
	header `yaml:",inline"`
	Spec   struct {
		AccessModes      []string `yaml:"accessModes"`
		StorageClassName *string  `yaml:"storageClassName"`
		Resources        struct {
			Requests map[string]string `yaml:"requests"`
		} `yaml:"resources"`
	} `yaml:"spec"`
}

type servingRuntime struct {
	header `yaml:",inline"`
	Spec   struct {
		Annotations           map[string]string `yaml:"annotations"`
		SupportedModelFormats []struct {
			Name       string `yaml:"name"`
			Version    string `yaml:"version"`
			AutoSelect *bool  `yaml:"autoSelect"`
			Priority   *int   `yaml:"priority"`
		} `yaml:"supportedModelFormats"`
		ProtocolVersions []string    `yaml:"protocolVersions"`
		Containers       []container `yaml:"containers"`
	} `yaml:"spec"`
}

type inferenceService struct {
	header `yaml:",inline"`
	Spec   struct {
		Predictor struct {
			MinReplicas *int `yaml:"minReplicas"`
			MaxReplicas int  `yaml:"maxReplicas"`
			Model       struct {
				Runtime     string `yaml:"runtime"`
				ModelFormat struct {
					Name    string `yaml:"name"`
					Version string `yaml:"version"`
				} `yaml:"modelFormat"`
				ProtocolVersion string `yaml:"protocolVersion"`
				StorageURI      string `yaml:"storageUri"`
			} `yaml:"model"`
		} `yaml:"predictor"`
	} `yaml:"spec"`
}

type kustomization struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Resources  []string `yaml:"resources"`
	Images     []struct {
		Name    string `yaml:"name"`
		NewName string `yaml:"newName"`
		NewTag  string `yaml:"newTag"`
	} `yaml:"images"`
}

func (k *kustomization) rewrites(image string) bool {
	for _, i := range k.Images {
		if i.Name == image {
			return true
		}
	}
	return false
}

// kinds maps apiVersion and kind to the type a document decodes into;
// a document of any other kind fails the test.
var kinds = map[string]func() any{
	"apps/v1 Deployment":                            func() any { return new(deployment) },
	"v1 Pod":                                        func() any { return new(pod) },
	"v1 Service":                                    func() any { return new(service) },
	"v1 PersistentVolumeClaim":                      func() any { return new(pvc) },
	"autoscaling/v2 HorizontalPodAutoscaler":        func() any { return new(hpa) },
	"serving.kserve.io/v1alpha1 ServingRuntime":     func() any { return new(servingRuntime) },
	"serving.kserve.io/v1beta1 InferenceService":    func() any { return new(inferenceService) },
	"kustomize.config.k8s.io/v1beta1 Kustomization": func() any { return new(kustomization) },
}

// manifests is every document of every YAML file under deploy/.
type manifests struct {
	files []string // relative to deploy/
	docs  []doc
}

type doc struct {
	file string // relative to deploy/
	obj  any    // one of the types above
}

func loadManifests(t *testing.T) *manifests {
	t.Helper()
	m := &manifests{}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			return err
		}
		m.files = append(m.files, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for i := 0; ; i++ {
			var h header
			var node yaml.Node
			if err := dec.Decode(&node); err != nil {
				if err == io.EOF {
					break
				}
				return fmt.Errorf("%s: %v", path, err)
			}
			if err := node.Decode(&h); err != nil {
				return fmt.Errorf("%s document %d: %v", path, i, err)
			}
			newObj, ok := kinds[h.APIVersion+" "+h.Kind]
			if !ok {
				return fmt.Errorf("%s document %d: %s %s is not a kind this test checks", path, i, h.APIVersion, h.Kind)
			}
			obj := newObj()
			if err := decodeStrict(&node, obj); err != nil {
				return fmt.Errorf("%s document %d (%s): %v", path, i, h.Kind, err)
			}
			if h.Kind != "Kustomization" && h.Metadata.Name == "" {
				return fmt.Errorf("%s document %d (%s) has no metadata.name", path, i, h.Kind)
			}
			m.docs = append(m.docs, doc{path, obj})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.docs) == 0 {
		t.Fatal("no manifests found under deploy/")
	}
	return m
}

// decodeStrict decodes node into v, failing on fields v's type lacks.
func decodeStrict(node *yaml.Node, v any) error {
	b, err := yaml.Marshal(node)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	return dec.Decode(v)
}

// all returns the documents of type T.
func all[T any](m *manifests) []*T {
	var out []*T
	for _, d := range m.docs {
		if v, ok := d.obj.(*T); ok {
			out = append(out, v)
		}
	}
	return out
}

// one returns the only document of type T.
func one[T any](t *testing.T, m *manifests) *T {
	t.Helper()
	v := all[T](m)
	if len(v) != 1 {
		t.Fatalf("%d manifests of %T, want 1", len(v), v)
	}
	return v[0]
}

func (m *manifests) fileOf(obj any) string {
	for _, d := range m.docs {
		if d.obj == obj {
			return d.file
		}
	}
	return "?"
}

// TestManifestsParse checks that every manifest decodes strictly, and that
// each directory's kustomization lists its manifests.
func TestManifestsParse(t *testing.T) {
	m := loadManifests(t)
	for _, dir := range []string{"kubernetes", "kserve"} {
		var k *kustomization
		var inDir []string
		for _, d := range m.docs {
			if filepath.Dir(d.file) != dir {
				continue
			}
			switch v := d.obj.(type) {
			case *kustomization:
				k = v
			case *pod:
				// A helper run by hand (models-loader.yaml), not deployed.
			default:
				inDir = append(inDir, filepath.Base(d.file))
			}
		}
		if k == nil {
			t.Errorf("%s/ has no kustomization.yaml", dir)
			continue
		}
		inDir = slices.Compact(slices.Sorted(slices.Values(inDir)))
		listed := slices.Sorted(slices.Values(k.Resources))
		if !slices.Equal(inDir, listed) {
			t.Errorf("%s/kustomization.yaml lists %v; the directory's manifests are %v", dir, listed, inDir)
		}
	}
	var kinds []string
	for _, d := range m.docs {
		kinds = append(kinds, fmt.Sprintf("%s:%T", d.file, d.obj))
	}
	sort.Strings(kinds)
	t.Logf("%d documents in %d files: %s", len(m.docs), len(m.files), strings.Join(kinds, " "))
}
