// Replaces github.com/go-acme/lego/v5/providers/dns/zz_gen_dns_providers.go in the Traefik build
// (build-tools.sh passes it to `go build -overlay`). Upstream, that file imports every one of
// lego's ~220 DNS providers; the Go module proxy here refuses the SDKs of about fifteen of them,
// so Traefik cannot be built with it. The harness never uses ACME DNS-01 through Traefik
// (certificates come from cert-manager), so the registry is empty: naming a DNS provider in a
// Traefik certificate resolver fails with the error below instead of at build time.
package dns

import (
	"fmt"

	"github.com/go-acme/lego/v5/challenge"
)

// NewDNSChallengeProviderByName is lego's provider factory, without providers.
func NewDNSChallengeProviderByName(name string) (challenge.Provider, error) {
	return nil, fmt.Errorf("DNS provider %q is not built into the KubeSpaces harness's Traefik (acceptance/tools/traefik/_overlay): use cert-manager for certificates", name)
}
