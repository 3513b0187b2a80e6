# The idd image used by docker-compose.yml: compiled JavaScript, production dependencies only.
# No stack/: the local stack's installer is development tooling. The image's services come from
# KAFKA_BROKERS, REDIS_URL, MONGODB_URL and SCHEMA_REGISTRY_URL; without them idd says none are set.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src src
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist dist
COPY package.json ./
COPY lua lua
COPY schemas schemas
USER node
ENTRYPOINT ["node", "dist/src/cli/main.js"]
