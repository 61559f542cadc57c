# Keel's one image: the starter CLI (which also serves the fake model gateway), the worker and the
# Slack bot. docker-compose.yml runs every Keel service from it; each is configured only through
# KEEL_* environment variables (see docs/configuration.md).

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so editing Keel's code does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ENV CGO_ENABLED=0
RUN go build -trimpath -ldflags="-s -w" -o /out/starter ./starter \
 && go build -trimpath -ldflags="-s -w" -o /out/worker ./worker \
 && go build -trimpath -ldflags="-s -w" -o /out/slackbot ./cmd/slackbot

# The worker runs the agents' tool commands (go, git, sh ...) in its work directory, so the runtime
# keeps a shell and git rather than being distroless.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates git \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 keel \
 && mkdir -p /workspace && chown keel:keel /workspace
COPY --from=build /out/ /usr/local/bin/
USER keel
WORKDIR /workspace
CMD ["worker"]
