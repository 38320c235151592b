//go:build tools

// The upstream conformance suite and the program most of its tests run in their pods, from the
// same Kubernetes module (and the same pins) as the cluster: build-tools.sh --with conformance
// builds e2e.test (go test -c) and agnhost from this module.
package tools

import (
	_ "k8s.io/kubernetes/test/e2e"
	_ "k8s.io/kubernetes/test/images/agnhost"
)
