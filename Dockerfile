# The gateway image: `dpg serve` as UID/GID 10001, read-only root filesystem, one writable data
# directory. Build:   docker build -t dpg:0.1.0 .     (podman build --format docker … works too)
# Run the sidecar profile (the default config: keys from DPG_KEYRING, since NODE_ENV=production refuses
# a generated keyring; admin listener for /metrics, /healthz, /readyz on 127.0.0.1:15020), or mount
# your own /etc/dpg/gateway.yaml:
#   docker run --read-only -v dpg-data:/var/lib/dpg -e DPG_KEYRING="$(base64 -w0 keyring.yaml)" \
#     -e DPG_PROXY_ADDR=0.0.0.0:15001 -p 15001:15001 dpg:0.1.0
#
# The same image runs `dpg capture` (root, NET_ADMIN/NET_RAW only: the dpg-init container of a
# Kubernetes pod) and the transparent listener (koffi's native binary): it carries Debian's iptables.
#
# Both stages' bases are build arguments. The build base must be Debian-based (apt-get installs
# iptables there when it lacks it). The runtime base needs `node` (20.19+) on PATH, /usr/bin/env and
# a glibc at least as new as the build base's (the iptables libraries are copied from the build
# stage, so no package manager is needed at run time); nothing else from it is used.
# scripts/image-smoke.mjs builds this file against local bases made from the machine's node.
# Every RUN uses the exec form: no shell is needed in either base.

ARG BUILD_IMAGE=node:20-bookworm-slim
ARG RUNTIME_IMAGE=node:20-bookworm-slim

FROM ${BUILD_IMAGE} AS build
WORKDIR /build
# iptables and ip6tables (nft and legacy backends, the xtables extensions) with their libraries,
# gathered from dpkg's records into /out/iptables for the runtime stage: about 3 MB.
COPY scripts/iptables-files.mjs scripts/iptables-files.mjs
RUN ["node", "scripts/iptables-files.mjs", "/out/iptables"]
COPY package.json package-lock.json ./
# --ignore-scripts: the sources are not here yet (the `prepare` build runs below).
RUN ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"]
COPY tsconfig.json ./
COPY scripts/build.mjs scripts/build.mjs
COPY bin/ bin/
COPY proto/ proto/
COPY src/ src/
# config/: the build's warm start of the sidecar profile makes dist/serve.cjs.cache, the V8 code
# cache `dpg serve` starts with (docs/operations.md, Start-up code cache).
COPY config/ config/
RUN ["node", "scripts/build.mjs"]
# Libraries are bundled into dist/; node-sql-parser (loaded per dialect) and koffi (a native FFI for
# the transparent listener, with per-platform binaries) stay dependencies.
RUN ["npm", "prune", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund"]
COPY LICENSE ./
# The runtime stage's files, assembled under /out: the app in /opt/dpg, the `dpg` command on PATH
# (a symlink, as npm installs bins), node-sql-parser without its browser builds and source maps,
# koffi without its C++ sources and docs (its prebuilt binaries stay), and the data directory
# (copied with the gateway's owner below).
RUN ["node", "-e", "\
const fs = require('fs');\
const app = '/out/app/opt/dpg';\
for (const f of ['package.json', 'LICENSE', 'bin', 'dist', 'proto', 'node_modules']) fs.cpSync(f, app + '/' + f, { recursive: true });\
const sql = app + '/node_modules/node-sql-parser';\
fs.rmSync(sql + '/umd', { recursive: true, force: true });\
for (const d of [sql, sql + '/build']) for (const f of fs.readdirSync(d)) if (f.endsWith('.map')) fs.rmSync(d + '/' + f);\
for (const d of ['doc', 'vendor', 'lib']) fs.rmSync(app + '/node_modules/koffi/' + d, { recursive: true, force: true });\
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
COPY --from=build /out/iptables/ /
COPY --from=build /out/app/ /
COPY --from=build --chown=10001:10001 /out/data/ /var/lib/dpg/
# The default config is the sidecar profile (egress proxy and admin listener only; no API, no
# identity, no demo credentials; the keyring from DPG_KEYRING). Mount your own at
# /etc/dpg/gateway.yaml for the HTTP and gRPC APIs.
COPY config/sidecar.yaml /etc/dpg/gateway.yaml
COPY config/manifests/ /etc/dpg/manifests/
# Fail the build, not the pod, when this base cannot run what transparent capture needs: each
# iptables backend's tools start (their libraries resolve) and koffi loads its native binary and
# binds getsockopt (SO_ORIGINAL_DST).
RUN ["node", "-e", "\
const { execFileSync } = require('child_process');\
for (const tool of ['iptables-nft', 'ip6tables-nft', 'iptables-legacy', 'ip6tables-legacy']) process.stdout.write(execFileSync('/usr/sbin/' + tool, ['--version']));\
const koffi = require('/opt/dpg/node_modules/koffi');\
koffi.load(null).func('int getsockopt(int fd, int level, int name, _Out_ void *value, _Inout_ void *length)');\
console.log('koffi loads, getsockopt bound');\
"]
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
