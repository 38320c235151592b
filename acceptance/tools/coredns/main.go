// A CoreDNS with only the plugins cluster DNS needs. CoreDNS's own main links every plugin
// (route53, azure, clouddns, ...) and their cloud SDKs; these are the plugins a cluster's Corefile
// uses, so the build is a fraction of the size and time.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/rewrite"
)

// The order plugins run in, a subset of CoreDNS's plugin.cfg in the same relative order.
// rewrite and forward are for the CoreDNS a vCluster deploys inside itself: its Corefile rewrites
// *.nodes.vcluster.com and forwards the rest to /etc/resolv.conf (the node's, which names only
// the pod's own loopback, so nothing leaves the machine).
var directives = []string{
	"reload", "ready", "health", "prometheus", "errors", "log",
	"loadbalance", "rewrite", "cache", "hosts", "kubernetes", "loop", "forward",
}

func main() {
	dnsserver.Directives = directives
	coremain.Run()
}
