# syntax=docker/dockerfile:1
#
# One image for every role (api, receiver, worker, all) and for the command line:
#   docker build -t parley .
#   docker run --rm -p 127.0.0.1:3000:3000 -p 127.0.0.1:3001:3001 -v parley-data:/data parley
#       the whole service on the embedded database, demo seeded (credentials in /data/demo-credentials.json)
#   docker run --rm parley --help
# compose.yaml runs it against Postgres with one service per role; docs/deploy.md has both.
#
# CI has no Docker engine: scripts/docker-build-check.sh runs the `build` stage's COPY and RUN lines as a
# shell script on a clean clone and starts the last stage's command from the folder it assembles. Keep
# the build stage's RUN lines plain `sh`, relative to its WORKDIR, writing the runtime folder to $RUNTIME.

ARG NODE_IMAGE=node:20-bookworm-slim

# The toolchain: Node and pnpm at the version package.json pins. (corepack's bundled signing keys lag
# behind pnpm's releases, so npm installs it.)
FROM ${NODE_IMAGE} AS base
COPY package.json /tmp/parley-package.json
RUN npm install -g "pnpm@$(node -p 'require("/tmp/parley-package.json").packageManager.split("@")[1]')" \
 && rm /tmp/parley-package.json
ENV npm_config_store_dir=/pnpm/store

# The build: install from the lockfile, bundle, assemble the runtime folder.
FROM base AS build
WORKDIR /src
ARG RUNTIME=/runtime
COPY . .
RUN --mount=type=cache,id=parley-pnpm-store,target=/pnpm/store pnpm install --frozen-lockfile
# node_modules/.cache keeps the build's migrated initial database between builds (scripts/build.mjs)
RUN --mount=type=cache,id=parley-build-cache,target=/src/node_modules/.cache pnpm build
RUN sh scripts/assemble-runtime.sh "$RUNTIME"

# The image: Node, the bundle and the three packages it loads at run time; no pnpm, no sources.
FROM ${NODE_IMAGE} AS runtime
ENV HOST=0.0.0.0 \
    PARLEY_DATA_DIR=/data
WORKDIR /app
COPY --from=build /runtime /app
# /data: the embedded database (without DATABASE_URL), generated secrets, and the file store (files/)
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
# api, receiver, cluster runner (worker and all with DATABASE_URL)
EXPOSE 3000 3001 3002
ENTRYPOINT ["node", "dist/parley.mjs"]
CMD ["serve", "--role", "all"]
