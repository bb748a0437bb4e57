# syntax=docker/dockerfile:1
#
# The herald image: a static binary (CGO_ENABLED=0) on distroless's static
# base, run as its non-root user, the data directory a volume, and a
# HEALTHCHECK through `herald healthcheck` (the base has no shell or curl).
# Both base images are pinned by digest: a rebuild gets the same bases
# until someone changes the digest in a reviewed commit.
#
#   docker build -t herald --build-arg VERSION=$(git describe --tags --always --dirty) --build-arg COMMIT=$(git rev-parse HEAD) .
#   docker run -p 8080:8080 -v herald-data:/data herald
#
# VERSION and COMMIT are what `herald version` reports, as `make build`
# sets them (the context has no .git to read them from).
#
# deploy/compose.yaml runs the production layout; docs/operations.md.

FROM golang:1.26-alpine@sha256:f1ddd9fe14fffc091dd98cb4bfa999f32c5fc77d2f2305ea9f0e2595c5437c14 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.buildVersion=${VERSION} -X main.buildCommit=${COMMIT}" \
      -o /out/herald ./cmd/herald \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot@sha256:d093aa3e30dbadd3efe1310db061a14da60299baff8450a17fe0ccc514a16639
COPY --from=build /out/herald /usr/local/bin/herald
# The data directory belongs to the image's user (distroless's nonroot,
# 65532), so that a fresh named volume mounted there is writable.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV HERALD_HTTP_ADDR=0.0.0.0:8080 \
    HERALD_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/usr/local/bin/herald", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/herald"]
CMD ["serve"]
