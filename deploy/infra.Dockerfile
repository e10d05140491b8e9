# The staging stack's infrastructure, from Debian's own packages on the same base as the
# services (so the stack needs no image but debian:bookworm-slim, which deploy/staging/images
# can make without a registry): one target each.
#
#   docker build -f deploy/infra.Dockerfile --target nats     -t swarmdeck-nats:local .
#   docker build -f deploy/infra.Dockerfile --target postgres -t swarmdeck-postgres:local .
#   docker build -f deploy/infra.Dockerfile --target edge     -t swarmdeck-edge:local .
#   docker build -f deploy/infra.Dockerfile --target postgres-ha -t swarmdeck-postgres-ha:local .
#
# Each runs as its own non-root user with a fixed uid (the compose secrets it reads are
# bind-mounted files). Nothing secret is in a layer: passwords and the NATS configuration
# arrive at run time as compose secrets.

FROM debian:bookworm-slim AS nats
# nats-server 2.9 (Debian bookworm), the version the tests run against.
RUN groupadd --system --gid 903 nats \
 && useradd --system --uid 903 --gid 903 --home-dir /nonexistent --shell /usr/sbin/nologin nats \
 && apt-get update \
 && apt-get install -y --no-install-recommends nats-server \
 && apt-get clean && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data && chown nats:nats /data
COPY deploy/staging/http-ok /usr/local/bin/http-ok
USER nats
EXPOSE 4222 8222
# The configuration (users, permissions, JetStream store in /data) is a secret of the stack.
CMD ["nats-server", "-c", "/run/secrets/nats.conf"]

FROM debian:bookworm-slim AS postgres
# A fixed uid before the package makes its own, so the data volume and the bind-mounted secrets
# have a known owner.
RUN groupadd --system --gid 902 postgres \
 && useradd --system --uid 902 --gid 902 --home-dir /var/lib/postgresql --shell /bin/bash postgres \
 && apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15 \
 && apt-get clean && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /var/lib/postgresql/data /run/postgresql \
 && chown -R postgres:postgres /var/lib/postgresql /run/postgresql \
 && chmod 0700 /var/lib/postgresql/data
COPY deploy/staging/postgres-entrypoint /usr/local/bin/postgres-entrypoint
COPY deploy/staging/postgres-roles.sql /usr/local/share/swarmdeck/postgres-roles.sql
USER postgres
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
EXPOSE 5432
STOPSIGNAL SIGINT
CMD ["postgres-entrypoint"]

# The cluster compose's Postgres (deploy/staging/cluster/compose.yml): the same server under
# Patroni, with etcd for Patroni's consensus, haproxy routing to the primary and PgBouncer in
# front of it, all from Debian. One image, each container running one of them.
FROM postgres AS postgres-ha
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends patroni python3-etcd etcd-server pgbouncer haproxy \
 && apt-get clean && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /var/lib/etcd && chown postgres:postgres /var/lib/etcd && chmod 0700 /var/lib/etcd
COPY deploy/staging/cluster/patroni-entrypoint deploy/staging/cluster/patroni-roles \
     deploy/staging/cluster/pgbouncer-entrypoint /usr/local/bin/
COPY deploy/staging/cluster/haproxy.cfg /etc/swarmdeck/haproxy.cfg
COPY deploy/staging/http-ok /usr/local/bin/http-ok
USER postgres
EXPOSE 5432 8008 6432 5000 2379
CMD ["patroni-entrypoint"]

# The edge (nginx) and, from the same image, the tenant-affine route to stream-fanout (HAProxy,
# the compose file's fanout-router).
FROM debian:bookworm-slim AS edge
RUN apt-get update \
 && apt-get install -y --no-install-recommends nginx-light libjs-term.js haproxy \
 && apt-get clean && rm -rf /var/lib/apt/lists/* \
 && rm -f /etc/nginx/sites-enabled/* /etc/nginx/modules-enabled/*
COPY deploy/edge/nginx.compose.conf /etc/nginx/nginx.conf
# The web console: static files, served at the paths of the services' webUrl links.
COPY web/console /srv/swarmdeck/console
COPY deploy/staging/http-ok /usr/local/bin/http-ok
COPY deploy/edge/edge-entrypoint /usr/local/bin/edge-entrypoint
COPY deploy/edge/fanout-router.cfg /etc/swarmdeck/fanout-router.cfg
# Debian's www-data; temporary files and the pid go to /tmp (see nginx.compose.conf).
USER www-data
# 8443 HTTPS and WSS (its certificate from /run/secrets), 8080 plain HTTP that only redirects.
EXPOSE 8080 8443
CMD ["edge-entrypoint"]
