// The demo checkout service in Go: GET /checkout prices a cart and renders a receipt.
// Profiled by the RootTrace Go SDK when ROOTTRACE_SERVER is set (ROOTTRACE_KEY the ingest
// key), as service DEMO_SERVICE (default checkout-go; bench/truth runs several);
// DEMO_VERSION is its release (2.0 makes applyDiscount 3x slower); PORT=0 picks a free port,
// printed as "<service> <version> listening on <port>".
package main

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	roottrace "github.com/roottrace/roottrace/sdk/go"
)

func handleCheckout(w http.ResponseWriter, r *http.Request) {
	items := []int{3, 14, 15, 92, 65, 35, 89, 79}
	total := applyDiscount(items) + tax(items)
	w.Header().Set("Content-Type", "text/html")
	fmt.Fprint(w, renderReceipt(items, total))
}

func main() {
	service := os.Getenv("DEMO_SERVICE") // bench/truth runs several
	if service == "" {
		service = "checkout-go"
	}
	version := os.Getenv("DEMO_VERSION")
	if version == "" {
		version = "1.0"
	}
	if version == "2.0" {
		pricingWork = 3
	}
	if os.Getenv("ROOTTRACE_SERVER") != "" {
		// Server and Key come from ROOTTRACE_SERVER and ROOTTRACE_KEY.
		// Back to back: the demo squeezes an hour into 60 s windows, where the default's 5 s
		// of every minute on a tiny heap (sdk/go/heap.go) would leave one profile a window.
		opts := roottrace.Options{Service: service, Version: version, DutyCycle: roottrace.Continuous}
		if err := roottrace.Start(opts); err != nil {
			log.Printf("profiling not started: %v", err)
		}
	}
	port := os.Getenv("PORT")
	if port == "" {
		port = "0"
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/checkout", handleCheckout)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("%s %s listening on %d\n", service, version, l.Addr().(*net.TCPAddr).Port)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		_ = srv.Close()
	}()
	if err := srv.Serve(l); err != nil && err != http.ErrServerClosed {
		log.Print(err)
	}
	roottrace.Stop(5 * time.Second) // uploads the profile in progress
}
