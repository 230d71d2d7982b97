# The hookinbox service binary, and only it (the harness, cmd/hookinbox-lab,
# is not shipped). The command picks the process:
#   docker run IMAGE webhook | worker | migrate | endpoints add … | --help
# Configuration is environment variables only (README.md, "Configuration").
#
# The runtime is Debian slim rather than distroless so that container health
# checks can use curl and TLS to Temporal Cloud finds the system CA roots.
# Plain Dockerfile syntax: builds with BuildKit and with the legacy builder
# (docker-compose v1) alike.

ARG GO_VERSION=1.26.8
ARG DEBIAN_VERSION=13.6

FROM golang:${GO_VERSION}-trixie AS build
WORKDIR /src
# Modules first: this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# pgx and the Temporal SDK are pure Go: a static binary, no libc needed.
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/hookinbox ./cmd/hookinbox \
    && /out/hookinbox --help >/dev/null

FROM debian:${DEBIAN_VERSION}-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 hookinbox \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin hookinbox \
    && install -d -o 10001 -g 10001 -m 0700 /var/lib/hookinbox
# /var/lib/hookinbox: where docker-compose.yml keeps the secrets key file (a
# named volume takes this directory's owner and mode).
COPY --from=build /out/hookinbox /usr/local/bin/hookinbox
USER 10001:10001
# The intake's public port (HOOKINBOX_HTTP_ADDR), its internal listener
# (HOOKINBOX_INTERNAL_ADDR: /metrics, /readyz; loopback unless set, never to
# be published) and the worker's /metrics and /healthz (HOOKINBOX_WORKER_ADDR).
EXPOSE 8080 9090 9091
ENTRYPOINT ["hookinbox"]
CMD ["--help"]
