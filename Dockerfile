# One image for the whole gateway: by default the embedded gateway (`npm start`: one process, an
# embedded database under /app/data, no Redis or PostgreSQL); docker-compose.yml runs the same image
# as the scaled-out `web` and `worker` processes. node:20 on Debian bookworm (glibc 2.36) matches
# the bundled uWebSockets.js build. test/docker-image-layout.test.ts assembles the files the final
# stage copies and starts the gateway from them, so a file the image needs cannot go missing.

# Production dependencies only. Compilers are here in case a native module (better-sqlite3) has no
# prebuilt binary for the platform; they stay in this stage.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 SWITCHBOARD_DATA_DIR=/app/data
COPY --from=deps /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY src ./src
COPY bin ./bin
COPY web ./web
# The code stays root-owned and read-only to the server; only the data folder is writable.
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((reply) => process.exit(reply.ok ? 0 : 1), () => process.exit(1))"]
# Node itself is the command (no npm or shell layer), so `docker stop`'s SIGTERM reaches it and it drains.
CMD ["node", "--import", "tsx", "src/main.ts"]
