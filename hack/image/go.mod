// This module builds yarnfed's container image without a Docker engine
// (make image). It is not part of the main module: go-containerregistry stays
// out of yarnfed's own build.
module github.com/yarnfed/yarnfed/hack/image

go 1.26.0

require github.com/google/go-containerregistry v0.22.1

require (
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/klauspost/compress v1.19.2 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
	golang.org/x/sync v0.22.0 // indirect
)
