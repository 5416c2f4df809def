// Command image builds yarnfed's container image without a Docker engine:
// what deploy/Dockerfile says (FROM scratch, COPY the static binary, USER,
// ENTRYPOINT), assembled with go-containerregistry and written as an OCI
// image-layout archive that `ctr -n k8s.io images import` and `skopeo copy
// oci-archive:...` read.
//
// The build is reproducible: the layer's file has a fixed owner and time, the
// config's creation time is SOURCE_DATE_EPOCH (default 0), and the archive's
// entries are written in a fixed order with fixed headers, so the same binary
// and Dockerfile give the same image digest and the same archive bytes.
//
//	go run . -dockerfile ../../deploy/Dockerfile -context ../../bin/linux \
//	    -name yarnfed:latest -out ../../bin/image/yarnfed.oci.tar
//
// It prints the image (manifest) digest, which is what containerd reports for
// the imported image.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"
)

func main() {
	var o options
	flag.StringVar(&o.dockerfile, "dockerfile", "deploy/Dockerfile", "the Dockerfile (FROM scratch, COPY, USER, ENTRYPOINT only)")
	flag.StringVar(&o.context, "context", "bin/linux", "the build context COPY reads from")
	flag.StringVar(&o.name, "name", "yarnfed:latest", "image reference recorded in the archive (normalised as Docker does)")
	flag.StringVar(&o.out, "out", "bin/image/yarnfed.oci.tar", "the OCI archive to write")
	flag.Parse()
	if v := os.Getenv("SOURCE_DATE_EPOCH"); v != "" {
		sec, err := strconv.ParseInt(v, 10, 64)
		if err != nil || sec < 0 {
			fmt.Fprintf(os.Stderr, "image: SOURCE_DATE_EPOCH=%q: want non-negative seconds\n", v)
			os.Exit(2)
		}
		o.created = time.Unix(sec, 0).UTC()
	} else {
		o.created = time.Unix(0, 0).UTC()
	}
	d, err := build(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Println(d)
}
