# The image of any one service, chosen with the SERVICE build argument. Build from the root:
#   docker build --build-arg SERVICE=changes -t adsmcp/changes .
#   docker build --build-arg SERVICE=gateway --build-arg PORT=8080 -t adsmcp/gateway .
# The manifests and build stages do not depend on SERVICE, so BuildKit installs and builds once
# for all six images. No `# syntax=` line: it would make BuildKit pull its Dockerfile frontend from
# a registry; the frontend built into Docker 20.10 and later reads `RUN --mount` as it is.
# Without a registry, NODE_IMAGE=adsmcp/node-base:<version> (docs/images.md) is a base made here;
# the tests build the images from host-built bundles instead, with ./Dockerfile.prebuilt.
ARG NODE_IMAGE=node:20.20.2-bookworm-slim

# Every package.json and the lockfile at their own paths: the install layers below are reused
# until one of them changes, not on every source edit.
FROM ${NODE_IMAGE} AS manifests
WORKDIR /src
COPY . .
RUN mkdir /manifests \
 && find . -name node_modules -prune -o \( -name package.json -o -name package-lock.json \) -print0 \
    | xargs -0 cp --parents -t /manifests

# Every workspace and the build tools. `npm run build` typechecks the repository, then bundles
# each service's code, workspace packages included, into services/<name>/dist; npm packages stay
# external. No install scripts: the build needs none (esbuild finds its binary without one).
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY --from=manifests /manifests/ ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm run build

# The npm packages the bundle imports: this service's production dependencies, nothing else.
# devDependencies go first because npm installs a workspace's devDependencies that are
# workspaces themselves (testkit and its embedded PostgreSQL, the sandbox) even with --omit=dev.
# A version a bundled workspace package keeps for itself (packages/runtime/node_modules/ipaddr.js
# 2.x; the root's 1.x is the dev tools') is the bundle's: it goes to the service's node_modules,
# which the bundle finds first (the image has no packages/ directory).
FROM ${NODE_IMAGE} AS deps
ARG SERVICE
WORKDIR /app
COPY --from=manifests /manifests/ ./
RUN --mount=type=cache,target=/root/.npm \
    test -n "${SERVICE}" \
 && npm pkg delete devDependencies --workspaces \
 && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --workspace "@adsmcp/${SERVICE}" \
 && rm -rf node_modules/@adsmcp \
 && mkdir -p "services/${SERVICE}/node_modules" \
 && for d in packages/*/node_modules; do \
      if [ -d "$d" ]; then cp -a "$d/." "services/${SERVICE}/node_modules/"; fi; \
    done

# The runtime image: node, the service's bundle, its migrations and its production packages,
# at /app/service whatever the service; no sources, no build tools, nothing installed at run time.
FROM ${NODE_IMAGE}
ARG SERVICE
ARG PORT=50051
ENV NODE_ENV=production \
    NODE_OPTIONS=--enable-source-maps \
    HOST=0.0.0.0 \
    PORT=${PORT}
# The C allocator's thresholds the stack's processes run with too (SERVICE_ENV in
# packages/testkit/src/stack.ts): large blocks in mappings of their own, given back when freed,
# and an arena's free top given back over 128 KiB, so that a burst's buffers do not stay resident.
ENV MALLOC_MMAP_THRESHOLD_=131072 \
    MALLOC_TRIM_THRESHOLD_=131072
WORKDIR /app
COPY --from=deps /app/node_modules/ node_modules/
COPY --from=deps /app/services/${SERVICE}/node_modules/ service/node_modules/
# package.json for "type": "module"; main.js reads its migrations from ../migrations.
COPY --from=build /app/services/${SERVICE}/package.json service/
COPY --from=build /app/services/${SERVICE}/dist/ service/dist/
COPY --from=build /app/services/${SERVICE}/migrations/ service/migrations/
# The image's `node` user, by number so that Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
EXPOSE ${PORT}
# The V8 heap bounds the stack's processes run with too (SERVICE_NODE_FLAGS in
# packages/testkit/src/stack.ts; docs/performance.md, "Memory after the seeded runs"): the young
# generation and the old space's garbage bounded, so that a burst's memory does not stay for a
# minute or more after it; --expose-gc for the full collection the runtime asks for once the
# service falls quiet after work (packages/runtime/src/quiet-gc.ts). On the command line:
# NODE_OPTIONS does not take --heap-growing-percent.
CMD ["node", "--max-semi-space-size=4", "--heap-growing-percent=30", "--expose-gc", "service/dist/main.js"]
