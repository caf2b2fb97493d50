# ringkeeperd on Debian 12: built with the build set of deploy/install-deps.sh, run with only the
# runtime set, as a non-root user, its database in a volume (docs/OPERATIONS.md, "Container").
#   docker build -t ringkeeperd .
#   docker run -d -p 127.0.0.1:7070:7070 -v ringkeeper-data:/var/lib/ringkeeper ringkeeperd
# tests/deploy/test_dockerfile.sh runs these stages' commands without Docker: keep the build stage's
# RUN lines relative to WORKDIR, and the runtime's command in CMD.
FROM debian:12 AS build
COPY deploy/install-deps.sh /src/deploy/install-deps.sh
RUN /src/deploy/install-deps.sh --build
WORKDIR /src
COPY . .
RUN cmake -S . -B build-docker -DRK_TESTS=OFF -DRK_BENCH=OFF -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX=/usr/local && cmake --build build-docker -j2
RUN DESTDIR="$PWD/staging" cmake --install build-docker

FROM debian:12
COPY deploy/install-deps.sh /tmp/install-deps.sh
RUN /tmp/install-deps.sh --runtime && rm -rf /tmp/install-deps.sh /var/lib/apt/lists/*
COPY --from=build /src/staging/usr/local/ /usr/local/
RUN useradd --system --user-group --home-dir /var/lib/ringkeeper --shell /usr/sbin/nologin ringkeeper \
    && install -d -m 0700 -o ringkeeper -g ringkeeper /var/lib/ringkeeper
USER ringkeeper
VOLUME /var/lib/ringkeeper
EXPOSE 7070
# 0.0.0.0 inside the container: publish the port on the host's loopback (above) or behind a proxy
CMD ["ringkeeperd", "--db", "/var/lib/ringkeeper/ringkeeper.db", "--listen", "0.0.0.0:7070"]
