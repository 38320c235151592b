// A tiny HTTPS server for the harness's tests (image localhost/kubespaces/tlsserver): it answers
// every request with one line naming itself and the server name (SNI) the client asked for, so a
// test that reaches it through the Gateway's TLS passthrough sees the backend's own certificate
// and knows which backend answered.
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
	flag.Parse()
	if *name == "" {
		*name, _ = os.Hostname()
	}
	pair, err := tls.LoadX509KeyPair(*cert, *key)
	if err != nil {
		log.Fatalf("tlsserver: loading -cert %s and -key %s: %v", *cert, *key, err)
	}
	srv := &http.Server{
		Addr:              *addr,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sni := ""
			if r.TLS != nil {
				sni = r.TLS.ServerName
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
	log.Printf("tlsserver %s listening on %s", *name, *addr)
	log.Fatal(srv.ListenAndServeTLS("", ""))
}
