# syntax=docker/dockerfile:1
#
# The bench binary in a minimal image, for running shards on Kubernetes
# (deploy/kubernetes) or anywhere a container runs:
#
#   docker build -t REGISTRY/servebench:TAG .
#   docker run --rm REGISTRY/servebench:TAG help run
#
# The binary is static (no cgo: the standard library's resolver and TLS), so
# the final stage holds it, CA certificates and nothing else, and runs as a
# non-root user.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# -buildvcs=false: the build context leaves .git out (a worktree's .git
# points outside it), so the version reads "devel".
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags="-s -w" -o /out/bench ./cmd/bench

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/bench /usr/local/bin/bench
USER 65532:65532
WORKDIR /home/nonroot
ENTRYPOINT ["/usr/local/bin/bench"]
