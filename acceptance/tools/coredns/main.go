// A CoreDNS with only the plugins cluster DNS needs. CoreDNS's own main links every plugin
// (route53, azure, clouddns, ...) and their cloud SDKs; these are the plugins a cluster's Corefile
// uses, so the build is a fraction of the size and time.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

// The order plugins run in, a subset of CoreDNS's plugin.cfg in the same relative order.
var directives = []string{
	"reload", "ready", "health", "prometheus", "errors", "log",
	"loadbalance", "cache", "hosts", "kubernetes", "loop",
}

func main() {
	dnsserver.Directives = directives
	coremain.Run()
}
