// Package deploy holds no code: its directories hold the deployment
// manifests, and its test checks them.
//
//	deploy/kubernetes/  Deployment, Service, HorizontalPodAutoscaler and the
//	                    models PersistentVolumeClaim (kubectl apply -k)
//	deploy/kserve/      a KServe ServingRuntime (Open Inference Protocol v2
//	                    over ONNX) and an InferenceService that uses it
//
// The test parses every manifest strictly (an unknown or misspelt field is
// an error), checks the images, ports, probes, users and flags against the
// Dockerfile and against the flags serve itself prints with -h, and starts
// serve with each container's settings to ask the probe paths.
package deploy
