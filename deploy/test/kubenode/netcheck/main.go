// Command netcheck is a small network probe for the kubenode test cluster,
// packaged at Start as NetcheckImage (no registry to pull a busybox from):
//
//	netcheck serve ADDR        HTTP on ADDR; every path answers the hostname
//	                           (a pod's name) and a newline
//	netcheck get URL...        GET each URL, print "URL BODY" per line
//	netcheck resolve NAME...   look each name up, print "NAME IP[,IP...]"
//
// get and resolve retry each target for up to a minute (Services, endpoints
// and DNS records appear a moment after the pods), then print the last error
// to stderr and exit 1. Lookups use Go's own resolver, which reads the pod's
// /etc/resolv.conf: its nameserver, search list and ndots, as libc would.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: netcheck serve ADDR | get URL... | resolve NAME...")
		os.Exit(2)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "serve":
		host, _ := os.Hostname()
		err := http.ListenAndServe(args[0], http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintln(w, host)
		}))
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	case "get":
		client := &http.Client{Timeout: 5 * time.Second}
		for _, u := range args {
			retry(u, func() (string, error) {
				resp, err := client.Get(u)
				if err != nil {
					return "", err
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				if err != nil {
					return "", err
				}
				if resp.StatusCode != http.StatusOK {
					return "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
				}
				return strings.TrimSpace(string(b)), nil
			})
		}
	case "resolve":
		for _, name := range args {
			retry(name, func() (string, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				ips, err := net.DefaultResolver.LookupHost(ctx, name)
				return strings.Join(ips, ","), err
			})
		}
	default:
		fmt.Fprintf(os.Stderr, "netcheck: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
}

// retry calls fn until it succeeds or a minute has passed, printing
// "target result" or failing with the last error.
func retry(target string, fn func() (string, error)) {
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := fn()
		if err == nil {
			fmt.Println(target, out)
			return
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "netcheck: %s: %v\n", target, err)
			os.Exit(1)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
