# The gateway image: `dpg serve` as UID/GID 10001, read-only root filesystem, one writable data
# directory. Build:   docker build -t dpg:0.1.0 .     (podman build --format docker … works too)
# Run the sidecar profile (the default config), or mount your own /etc/dpg/gateway.yaml:
#   docker run --read-only -v dpg-data:/var/lib/dpg -e DPG_PROXY_ADDR=0.0.0.0:15001 -p 15001:15001 dpg:0.1.0
#
# Both stages' bases are build arguments. The runtime base needs `node` (20.19+) on PATH and
# /usr/bin/env (the Debian and Alpine node images have both); nothing else from it is used.
# scripts/image-smoke.mjs builds this file against a local base made from the machine's node.
# Every RUN uses the exec form: no shell is needed in either base.

ARG BUILD_IMAGE=node:20-bookworm-slim
ARG RUNTIME_IMAGE=node:20-bookworm-slim

FROM ${BUILD_IMAGE} AS build
WORKDIR /build
COPY package.json package-lock.json ./
# --ignore-scripts: the sources are not here yet (the `prepare` build runs below).
RUN ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"]
COPY tsconfig.json ./
COPY scripts/build.mjs scripts/build.mjs
COPY bin/ bin/
COPY proto/ proto/
COPY src/ src/
RUN ["node", "scripts/build.mjs"]
# Libraries are bundled into dist/; only node-sql-parser (loaded per dialect) stays a dependency.
RUN ["npm", "prune", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund"]
COPY LICENSE ./
# The runtime stage's files, assembled under /out: the app in /opt/dpg, the `dpg` command on PATH
# (a symlink, as npm installs bins), node-sql-parser without its browser builds and source maps,
# and the data directory (copied with the gateway's owner below).
RUN ["node", "-e", "\
const fs = require('fs');\
const app = '/out/app/opt/dpg';\
for (const f of ['package.json', 'LICENSE', 'bin', 'dist', 'proto', 'node_modules']) fs.cpSync(f, app + '/' + f, { recursive: true });\
const sql = app + '/node_modules/node-sql-parser';\
fs.rmSync(sql + '/umd', { recursive: true, force: true });\
for (const d of [sql, sql + '/build']) for (const f of fs.readdirSync(d)) if (f.endsWith('.map')) fs.rmSync(d + '/' + f);\
fs.mkdirSync('/out/app/usr/local/bin', { recursive: true });\
fs.symlinkSync('/opt/dpg/bin/dpg.js', '/out/app/usr/local/bin/dpg');\
fs.mkdirSync('/out/data', { mode: 0o700 });\
"]

FROM ${RUNTIME_IMAGE}
ARG DPG_VERSION=0.1.0
LABEL org.opencontainers.image.title="dpg" \
      org.opencontainers.image.description="Data Protection Gateway: protects personal data on its way out" \
      org.opencontainers.image.version="${DPG_VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/app/ /
COPY --from=build --chown=10001:10001 /out/data/ /var/lib/dpg/
# The default config is the sidecar profile (egress proxy only; no API, no identity, no demo
# credentials). Mount your own at /etc/dpg/gateway.yaml for the HTTP and gRPC APIs.
COPY config/sidecar.yaml /etc/dpg/gateway.yaml
COPY config/manifests/ /etc/dpg/manifests/
ENV NODE_ENV=production \
    DPG_CONFIG=/etc/dpg/gateway.yaml \
    DPG_DATA_DIR=/var/lib/dpg
USER 10001:10001
WORKDIR /var/lib/dpg
VOLUME ["/var/lib/dpg"]
EXPOSE 15001
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 CMD ["dpg", "probe", "ready", "--quiet"]
ENTRYPOINT ["dpg"]
CMD ["serve"]
