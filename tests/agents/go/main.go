// Command agents-go burns CPU in one known function (main.hotLoop, ~3/4 of the
// CPU) and a second one (main.coldLoop, ~1/4) while pyroscope-go v1.5.0 uploads
// to a capture server (tests/agents/capture.py).
//
//	go run . -server http://127.0.0.1:4040 -duration 35s -upload 5s -profiles cpu
//	go run . -profiles default   # cpu + alloc_objects/alloc_space/inuse_objects/inuse_space
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/grafana/pyroscope-go"
)

var sink []byte

// hotLoop is where most of the CPU goes.
//
//go:noinline
func hotLoop(n int) uint64 {
	var x uint64 = 1
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		x ^= x >> 17
	}
	if x%7 == 0 {
		sink = make([]byte, 4096) // a little allocation, for the alloc profiles
	}
	return x
}

// coldLoop gets about a third of hotLoop's CPU.
//
//go:noinline
func coldLoop(n int) uint64 {
	var x uint64 = 3
	for i := 0; i < n; i++ {
		x = x*2862933555777941757 + 3037000493
		x ^= x >> 13
	}
	return x
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

type stdLogger struct{}

func (stdLogger) Infof(f string, a ...interface{})  { log.Printf("[info] "+f, a...) }
func (stdLogger) Debugf(f string, a ...interface{}) { log.Printf("[debug] "+f, a...) }
func (stdLogger) Errorf(f string, a ...interface{}) { log.Printf("[error] "+f, a...) }

func main() {
	server := flag.String("server", "http://127.0.0.1:4040", "server address")
	duration := flag.Duration("duration", 35*time.Second, "how long to burn")
	upload := flag.Duration("upload", 5*time.Second, "pyroscope UploadRate")
	profiles := flag.String("profiles", "cpu", "cpu | default | comma list of pyroscope profile types")
	app := flag.String("app", "agents.go", "ApplicationName")
	password := flag.String("password", envOr("PYROSCOPE_BASIC_AUTH_PASSWORD", "rt_testkey"),
		"BasicAuthPassword (a RootTrace ingest key against roottrace serve)")
	flag.Parse()

	var types []pyroscope.ProfileType
	switch *profiles {
	case "default":
		types = pyroscope.DefaultProfileTypes
	default:
		for _, t := range strings.Split(*profiles, ",") {
			types = append(types, pyroscope.ProfileType(strings.TrimSpace(t)))
		}
	}
	host, _ := os.Hostname()
	p, err := pyroscope.Start(pyroscope.Config{
		ApplicationName:   *app,
		ServerAddress:     *server,
		BasicAuthUser:     "roottrace",
		BasicAuthPassword: *password,
		TenantID:          "rt-tenant",
		UploadRate:        *upload,
		ProfileTypes:      types,
		Tags:              map[string]string{"version": "1.0.0", "hostname": host},
		Logger:            stdLogger{},
	})
	if err != nil {
		log.Fatalf("pyroscope.Start: %v", err)
	}
	deadline := time.Now().Add(*duration)
	var acc uint64
	for time.Now().Before(deadline) {
		acc += hotLoop(3_000_000)
		acc += coldLoop(1_000_000)
	}
	fmt.Println("done", acc%10)
	p.Stop() // uploads the last partial profile
}
