# sandpiper in one image: the bot, and the Python 3.13 with a pinned
# scientific stack that its local sandbox runs the model's code with.
#
#   docker build -t sandpiper .
#
# The local sandbox needs user namespaces and a fresh /proc inside the
# container: run with --security-opt seccomp=unconfined, apparmor=unconfined
# and systempaths=unconfined (README.md, "Docker", says why).
# cmd/sandpiper/dockerfile_test.go checks this file's references.

# Build stage: the bot binary, and sandpiper-exec, which `sandpiper exec`
# hands its run over to (a binary without the bot's packages, quicker to
# start; it must be of the same build, beside sandpiper). cgo builds the
# sandbox's C helpers (sandbox/local/*.c); bookworm here matches the
# runtime's glibc.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=1 go build -trimpath -ldflags="-s -w" -o /out/ ./cmd/sandpiper ./cmd/sandpiper/sandpiper-exec

# Runtime stage: the official Python 3.13 image (the reference tool's
# Python), the pinned modules data questions and charts need, the binaries.
FROM python:3.13-slim-bookworm
RUN pip install --no-cache-dir --disable-pip-version-check --root-user-action=ignore \
        numpy==2.5.5 \
        pandas==3.1.1 \
        matplotlib==3.11.2 \
        scipy==1.18.1 \
        sympy==1.14.0 \
        openpyxl==3.1.5 \
        xlrd==2.0.1 \
    && python3 -c "import numpy, pandas, matplotlib, scipy, sympy, openpyxl, xlrd"
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/sandpiper \
        --shell /usr/sbin/nologin sandpiper \
    && mkdir -p /data \
    && chown sandpiper:sandpiper /data
COPY --from=build /out/sandpiper /out/sandpiper-exec /usr/local/bin/
ENV SANDPIPER_PYTHON=/usr/local/bin/python3 \
    SANDPIPER_DATA_DIR=/data \
    SANDPIPER_HTTP_ADDR=:8080
USER sandpiper
WORKDIR /home/sandpiper
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["/usr/local/bin/sandpiper", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/sandpiper"]
CMD ["run"]
