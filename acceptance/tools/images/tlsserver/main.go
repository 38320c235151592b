// A tiny HTTPS server for the harness's tests (image localhost/kubespaces/tlsserver): it answers
// every request with one line naming itself and the server name (SNI) the client asked for, so a
// test that reaches it through the Gateway's TLS passthrough sees the backend's own certificate
// and knows which backend answered. With -plain it serves HTTP instead (no certificate): the app
// of the apps benchmark, a server with keep-alive like most apps (busybox httpd closes every
// connection, which would measure connection set-up instead of the Gateway). With -log-auth it
// also logs the Authorization header of every request: the hostile-tenant tests run it as the
// tenant's impostor of a platform endpoint and read from its log what a client gave away.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("addr", ":8443", "address to listen on")
	cert := flag.String("cert", "/tls/tls.crt", "PEM certificate (chain) file")
	key := flag.String("key", "/tls/tls.key", "PEM private key file")
	name := flag.String("name", "", "name to answer with (default: the host name)")
	plain := flag.Bool("plain", false, "serve plain HTTP (no -cert/-key)")
	logAuth := flag.Bool("log-auth", false, "log the Authorization header of every request")
	flag.Parse()
	if *name == "" {
		*name, _ = os.Hostname()
	}
	srv := &http.Server{
		Addr:              *addr,
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sni := ""
			if r.TLS != nil {
				sni = r.TLS.ServerName
			}
			if *logAuth {
				log.Printf("request %s %s from %s authorization=%q", r.Method, r.URL.Path, r.RemoteAddr, r.Header.Get("Authorization"))
			}
			fmt.Fprintf(w, "hello from %s (sni %s)\n", *name, sni)
		}),
	}
	// SIGTERM (pod deletion) ends it at once: it holds no state worth draining.
	go func() {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
		<-sigs
		os.Exit(0)
	}()
	if *plain {
		log.Printf("tlsserver %s listening on %s (plain HTTP)", *name, *addr)
		log.Fatal(srv.ListenAndServe())
	}
	pair, err := tls.LoadX509KeyPair(*cert, *key)
	if err != nil {
		log.Fatalf("tlsserver: loading -cert %s and -key %s: %v", *cert, *key, err)
	}
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	log.Printf("tlsserver %s listening on %s", *name, *addr)
	log.Fatal(srv.ListenAndServeTLS("", ""))
}
