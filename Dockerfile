# The Herald image for cluster mode (docker-compose.yml): the same image runs the API (`npm run api`, the default)
# and the workers (`npm run worker`). Like `npm start`, its processes run the server compiled to JavaScript
# (scripts/run.cjs: dist/server/<hash of the sources>) and the web console built from web/ into dist/web (which the API
# serves at /app): both made here once, in the image, so that its processes never write beside the code.
FROM node:20-bookworm-slim

ENV NODE_ENV=production
WORKDIR /app

# Dependencies first, so that a source change does not reinstall them. Production dependencies only: esbuild (the
# server's and the console's build), tsx (the console's build script), and the Temporal worker's own bundler for the
# workflow code, are among them.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

COPY . .
RUN npm run --silent build:web && npm run --silent build:server

# Run as the image's unprivileged `node` user. DATA_DIR (./.data) is only used when SECRET_KEY, DATABASE_URL or
# SMTP_URL are unset; it must be writable then.
RUN mkdir -p /app/.data && chown node:node /app/.data
USER node

EXPOSE 3000
CMD ["npm", "run", "api"]
