# aigateway: one image for the proxy (`serve`) and the operator (`operator`).
# Node 24 runs the TypeScript sources directly (type stripping); no build step.
# There is no public image: build and push your own (docs/kubernetes.md):
#   docker build -t registry.example.com/aigateway:0.1.0 . && docker push registry.example.com/aigateway:0.1.0
FROM node:24-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only; no install scripts (no native addons).
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

FROM node:24-slim
ENV NODE_ENV=production
# A young generation of 2 × 16 MiB whatever the pod's memory limit: V8 would size it from the
# limit (1 MiB semi-spaces under 512Mi, -23% req/s) or from the node's RAM (32 MiB, +60 MiB
# RSS for nothing measurable). And an old space of at most 1 GiB: on a host with V8's default
# (a quarter of the RAM, up to 4 GiB) the heap grows to 4x its live data between collections
# (+85 MiB RSS saturating a core, same req/s); under 2 GiB V8 grows it at most 2x. The chart
# sizes it from the pod's memory limit instead. Measured in docs/performance.md; npm start and
# bench/ use the same.
ENV NODE_OPTIONS="--max-semi-space-size=16 --max-old-space-size=1024"
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY proxy ./proxy
COPY operator ./operator
COPY crds ./crds
# The web console, built at build time and committed (npm run build:console; docs/console.md).
COPY console/dist ./console/dist
# `docker run <image>` with no mounts serves the example state (a random gateway API key is
# printed at start); the chart and compose.yaml mount their own over /etc/aigateway/state.
COPY gateway.example.yaml /etc/aigateway/state/gateway.yaml
# A compile-cache seed made at build time, by the uid the container runs as (Node keeps one
# cache per uid): a container's first start copies it to /tmp and loads compiled,
# type-stripped modules instead of stripping and compiling ~1,000 of them (docs/performance.md).
RUN ["node", "-e", "fs.mkdirSync('/app/.compile-cache'); fs.chownSync('/app/.compile-cache', 1000, 1000)"]
ENV AIGATEWAY_COMPILE_CACHE_SEED=/app/.compile-cache \
    AIGATEWAY_COMPILE_CACHE_DIR=/tmp/aigateway-compile-cache
# The default data directory (SQLite stores, the generated secret key), owned by uid 1000:
# without it `docker run <image>` dies at start. The chart mounts an emptyDir at --data-dir.
RUN ["node", "-e", "fs.mkdirSync('/app/.data', { mode: 0o700 }); fs.chownSync('/app/.data', 1000, 1000)"]
ENV AIGATEWAY_DATA_DIR=/app/.data
# The image's `node` user (uid/gid 1000): never root. Nothing else in /app is writable by it at
# run time: the chart runs with a read-only root filesystem and mounts --data-dir and /tmp as volumes.
USER 1000:1000
RUN ["node", "bin/warm-compile-cache.js", "/app/.compile-cache"]
# Mount a volume here to keep the request log and batches beyond the container.
VOLUME ["/app/.data"]
EXPOSE 8787 8080 9090
ENTRYPOINT ["node", "bin/aigateway.js"]
CMD ["serve", "--config", "/etc/aigateway/state/gateway.yaml", "--host", "0.0.0.0"]
