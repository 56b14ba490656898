# qwn worker image, in two stages: the build stage compiles src/ into dist/ with the development
# dependencies; the image holds only dist/, the production dependencies and the migrations, and
# runs on Node 24 LTS. Nothing is written to the filesystem at run time, so the root filesystem
# may be mounted read-only (`docker run --read-only`, Kubernetes `readOnlyRootFilesystem`).
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY scripts ./scripts
COPY src ./src
RUN npm run build

FROM node:24-slim
ENV NODE_ENV=production \
    HTTP_HOST=0.0.0.0 \
    HTTP_PORT=9464
WORKDIR /app

# Dependencies first, so that a source change does not reinstall them. The demo's embedded
# Postgres, mail sink and signature checker are development dependencies: not in the image.
# --omit=optional as well, because npm keeps a development dependency that a production one
# names as an optional peer (PGlite, for drizzle-orm); the other optional packages are a
# msgpack decoder BullMQ does not use (it only encodes) and type definitions.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund \
    && npm cache clean --force

COPY bin ./bin
COPY --from=build /app/dist ./dist
COPY migrations ./migrations
COPY examples ./examples

# Root is not needed for anything the worker does.
USER node

EXPOSE 9464
# /healthz answers 503 when Postgres or Redis is gone, QWeather refuses the key or cycles stop.
# node:24-slim has no curl; Node's own fetch does the probe.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.HTTP_PORT || 9464) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# SIGTERM lets in-flight jobs finish for up to 25 s: give the container longer before SIGKILL
# (docker stop -t 40, compose stop_grace_period).
STOPSIGNAL SIGTERM
CMD ["node", "bin/qwn.js", "worker"]
