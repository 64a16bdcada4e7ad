# One image for both scaled-out processes (docker-compose.yml picks the command: web or worker).
# node:20 on Debian bookworm (glibc 2.36) matches the bundled uWebSockets.js build.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force
COPY src ./src
COPY tsconfig.json ./
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080
EXPOSE 8080
USER node
CMD ["node", "--import", "tsx", "src/ingress/ingress-main.ts"]
