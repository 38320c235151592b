// cert-manager: the cert-manager controller (github.com/cert-manager/cert-manager v1.21.2) for the
// local cluster, from the module's public packages only.
//
// Upstream's binary (cmd/controller) is a nested module that the Go proxy does not serve, and its
// app/ package imports internal/ packages, so this project-owned main does what its Run does:
// blank-import the controller packages (each registers itself in init()), build one
// ContextFactory, construct and run the wanted controllers, start the informer factories.
//
// Only the controllers an offline issuer chain needs run: SelfSigned and CA issuers,
// Certificates, and the approver. ACME (orders, challenges, the ACME issuer) is left out on
// purpose: its packages pull in every cloud DNS SDK and would double the build.
//
//	cert-manager [--kubeconfig FILE] [--cluster-resource-namespace NS]
//	             [--certificate-request-minimum-backoff 1h] [--leader-elect] [--version]
//
// Serves /metrics on --metrics-listen-address (:9402) and, once every informer has synced,
// /livez on --healthz-listen-address (:9403): the pod's readiness probe.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/healthz"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"

	// Each of these registers its controller (or issuer) in init().
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/metrics"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// The controllers this binary runs: every one the imports above register (the names are
// upstream's, as in its --controllers flag). The RBAC in acceptance/harness/manifests/cert-manager
// is trimmed to exactly these.
var controllers = []string{
	"issuers", "clusterissuers",
	"certificates-trigger", "certificates-issuing", "certificates-key-manager",
	"certificates-request-manager", "certificates-readiness", "certificates-revision-manager",
	"certificates-metrics",
	"certificaterequests-approver", "certificaterequests-issuer-ca", "certificaterequests-issuer-selfsigned",
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file (empty: the in-cluster ServiceAccount)")
	crNamespace := flag.String("cluster-resource-namespace", "cert-manager",
		"namespace of the Secrets ClusterIssuers refer to (a CA ClusterIssuer's key pair)")
	minBackoff := flag.Duration("certificate-request-minimum-backoff", time.Hour,
		"first delay before a failed CertificateRequest is retried (upstream's default 1h; tests use seconds)")
	leaderElect := flag.Bool("leader-elect", false,
		"take the Lease cert-manager-controller in --leader-election-namespace before running (only with >1 replica)")
	leNamespace := flag.String("leader-election-namespace", "",
		"namespace of the leader election Lease (default: --cluster-resource-namespace)")
	metricsAddr := flag.String("metrics-listen-address", ":9402", "Prometheus /metrics (empty: off)")
	healthzAddr := flag.String("healthz-listen-address", ":9403", "/livez, served once the informers have synced")
	workers := flag.Int("concurrent-workers", 5, "workers per controller (upstream's default)")
	version := flag.Bool("version", false, "print the version and exit")
	klog.InitFlags(nil) // -v=N for more detail (cert-manager logs through klog)
	flag.Parse()
	if *version {
		fmt.Println("cert-manager", util.AppVersion)
		return
	}
	if *leNamespace == "" {
		*leNamespace = *crNamespace
	}
	logf.InitLogs()
	defer logf.FlushLogs()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log, "controller")
	log := logf.FromContext(ctx)
	log.Info("starting cert-manager controller", "version", util.AppVersion, "controllers", controllers)

	if err := run(ctx, options{*kubeconfig, *crNamespace, *minBackoff, *leaderElect, *leNamespace,
		*metricsAddr, *healthzAddr, *workers}); err != nil {
		log.Error(err, "cert-manager controller failed")
		logf.FlushLogs()
		os.Exit(1)
	}
}

type options struct {
	kubeconfig, crNamespace  string
	minBackoff               time.Duration
	leaderElect              bool
	leNamespace              string
	metricsAddr, healthzAddr string
	workers                  int
}

func run(rootCtx context.Context, o options) error {
	log := logf.FromContext(rootCtx)
	known := controller.Known()
	for _, n := range controllers {
		if _, ok := known[n]; !ok {
			return fmt.Errorf("controller %q is not registered (a blank import is missing)", n)
		}
	}

	// The options upstream's buildControllerContextFactory passes, minus ACME and the
	// certificate shims (not run here).
	f, err := controller.NewContextFactory(rootCtx, controller.ContextOptions{
		Kubeconfig:         o.kubeconfig,
		KubernetesAPIQPS:   20, // upstream's defaults
		KubernetesAPIBurst: 50,
		IssuerOptions:      controller.IssuerOptions{ClusterResourceNamespace: o.crNamespace},
		CertificateOptions: controller.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: o.minBackoff,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour, // upstream's default
		},
		// Gateway API on: the factory then checks that its CRDs are served (and fails clearly if
		// not), and the Gateway informers start (HTTP-01 via HTTPRoute and the gateway-shim use
		// them; neither runs in this binary yet).
		ConfigOptions: controller.ConfigOptions{EnableGatewayAPI: true},
	})
	if err != nil {
		return fmt.Errorf("building the controller context: %w", err)
	}
	base, err := f.Build()
	if err != nil {
		return err
	}

	g, ctx := errgroup.WithContext(rootCtx)

	if o.metricsAddr != "" {
		base.Metrics.SetupCertificateCollector(base.SharedInformerFactory.Certmanager().V1().Certificates().Lister())
		base.Metrics.SetupIssuerCollector(base.SharedInformerFactory.Certmanager().V1().Issuers().Lister())
		base.Metrics.SetupClusterIssuerCollector(base.SharedInformerFactory.Certmanager().V1().ClusterIssuers().Lister())
		ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", o.metricsAddr)
		if err != nil {
			return fmt.Errorf("metrics listener on %s: %w", o.metricsAddr, err)
		}
		srv := base.Metrics.NewServer(ln)
		g.Go(func() error { return serve(ctx, srv, ln) })
	}

	if o.leaderElect {
		if err := awaitLeadership(ctx, f, o.leNamespace); err != nil {
			return err
		}
	}

	for _, n := range controllers {
		iface, err := known[n](f)
		if err != nil {
			return fmt.Errorf("constructing controller %s: %w", n, err)
		}
		g.Go(func() error {
			log.V(logf.InfoLevel).Info("starting controller", "controller", n)
			return iface.Run(o.workers, ctx)
		})
	}

	// The controllers registered their informers on the shared factories while being
	// constructed; starting the factories now starts exactly those.
	base.SharedInformerFactory.Start(ctx.Done())
	base.KubeSharedInformerFactory.Start(ctx.Done())
	base.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	base.GWShared.Start(ctx.Done())

	// Ready = every informer synced: until then the controllers have not looked at anything.
	g.Go(func() error {
		ok := allSynced(base.KubeSharedInformerFactory.WaitForCacheSync(ctx.Done())) &&
			allSynced(base.SharedInformerFactory.WaitForCacheSync(ctx.Done())) &&
			allSynced(base.HTTP01ResourceMetadataInformersFactory.WaitForCacheSync(ctx.Done())) &&
			allSynced(base.GWShared.WaitForCacheSync(ctx.Done()))
		if !ok {
			return ctx.Err()
		}
		ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", o.healthzAddr)
		if err != nil {
			return fmt.Errorf("healthz listener on %s: %w", o.healthzAddr, err)
		}
		log.Info("informers synced; serving /livez", "address", ln.Addr().String())
		return healthz.NewServer(20*time.Second).Start(ctx, ln)
	})

	err = g.Wait()
	base.GWShared.Shutdown()
	base.HTTP01ResourceMetadataInformersFactory.Shutdown()
	base.KubeSharedInformerFactory.Shutdown()
	base.SharedInformerFactory.Shutdown()
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	log.Info("control loops exited")
	return nil
}

// allSynced: every informer of a factory's WaitForCacheSync answer synced.
func allSynced[K comparable](m map[K]bool) bool {
	for _, synced := range m {
		if !synced {
			return false
		}
	}
	return true
}

// serve runs srv on ln until ctx ends, then shuts it down (5 s grace, like upstream).
func serve(ctx context.Context, srv *http.Server, ln net.Listener) error {
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx) //nolint:contextcheck
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// awaitLeadership blocks until this process holds the Lease cert-manager-controller (upstream's
// lock name and timings); losing it later ends the process, as upstream does.
func awaitLeadership(ctx context.Context, f *controller.ContextFactory, namespace string) error {
	lctx, err := f.Build("leader-election")
	if err != nil {
		return err
	}
	id, err := os.Hostname()
	if err != nil {
		return err
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, namespace, "cert-manager-controller",
		lctx.Client.CoreV1(), lctx.Client.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: id + "-external-cert-manager-controller", EventRecorder: lctx.Recorder})
	if err != nil {
		return err
	}
	elected := make(chan struct{})
	go leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: 60 * time.Second, RenewDeadline: 40 * time.Second, RetryPeriod: 15 * time.Second,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(elected) },
			OnStoppedLeading: func() {
				if ctx.Err() == nil {
					logf.FromContext(ctx).Info("leader election lost; exiting")
					logf.FlushLogs()
					os.Exit(1)
				}
			},
		},
	})
	logf.FromContext(ctx).Info("waiting for the leader election Lease", "namespace", namespace)
	select {
	case <-elected:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
