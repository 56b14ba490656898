# qwn worker image. No build step: tsx (a runtime dependency) runs the TypeScript sources, the
# same files the tests run. Compiled JavaScript was measured (2026-11): the worker held ~115 MB
# instead of ~160 MB and answered /healthz about a second sooner, for a build stage, moved
# package.json and migrations/ paths, and a second artefact no test runs; not worth it for a
# process that starts once and runs for months.
FROM node:20-slim

ENV NODE_ENV=production \
    HTTP_PORT=9464
WORKDIR /app

# Dependencies first, so that a source change does not reinstall them.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY tsconfig.json ./
COPY bin ./bin
COPY src ./src
COPY migrations ./migrations
COPY examples ./examples

# Root is not needed for anything the worker does.
USER node

EXPOSE 9464
# /healthz answers 503 when Postgres or Redis is gone, QWeather refuses the key or cycles stop.
# node:20-slim has no curl; Node's own fetch does the probe.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.HTTP_PORT || 9464) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# SIGTERM lets in-flight jobs finish for up to 25 s: give the container longer before SIGKILL
# (docker stop -t 40, compose stop_grace_period).
STOPSIGNAL SIGTERM
CMD ["node", "bin/qwn.js", "worker"]
