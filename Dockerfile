# The Tapscope server as a container: the single binary built from this repository, serving the dashboard and the API
# on port 4000 with its data (PGlite and DuckDB, generated secrets) in the /data volume.
#   docker build -t tapscope .
#   docker run -p 4000:4000 -v tapscope-data:/data tapscope
# Build: the binary for this image's architecture plus the other one, so /install.sh can offer both.
FROM node:22-bookworm AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
ARG TAPSCOPE_COMMIT=unknown
RUN TAPSCOPE_COMMIT=$TAPSCOPE_COMMIT npm run build

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/* \
  && useradd --system --uid 10001 --home-dir /data tapscope && mkdir -p /data /opt/tapscope && chown tapscope /data
COPY --from=build /src/dist/tapscope-linux-x64 /src/dist/tapscope-linux-arm64 /opt/tapscope/
COPY --from=build /src/dist/tapscope /usr/local/bin/tapscope
ENV PORT=4000 DATA_DIR=/data DOWNLOAD_DIR=/opt/tapscope
USER tapscope
VOLUME /data
EXPOSE 4000
CMD ["tapscope", "server"]
