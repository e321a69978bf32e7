#!/bin/sh
# The stand-in's start: the official image's contract for the variables
# docker-compose.yml sets. Runs the server as `mysql`.
set -eu
if [ "${1:-}" = mariadbd ] && [ ! -d /var/lib/mysql/mysql ]; then
  chown mysql:mysql /var/lib/mysql /run/mysqld
  mariadb-install-db --user=mysql --datadir=/var/lib/mysql --skip-test-db \
    --auth-root-authentication-method=socket >/dev/null
  mariadbd --user=mysql --skip-networking --socket=/run/mysqld/init.sock &
  pid=$!
  i=0
  until mariadb --socket=/run/mysqld/init.sock -uroot -e 'SELECT 1' >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -lt 300 ] || { echo "stand-in mariadb: init server did not start" >&2; exit 1; }
    sleep 0.1
  done
  root_password=""
  if [ -n "${MARIADB_RANDOM_ROOT_PASSWORD:-}" ]; then
    root_password=$(head -c 18 /dev/urandom | base64)
    echo "GENERATED ROOT PASSWORD: $root_password"
  fi
  {
    [ -z "$root_password" ] || echo "ALTER USER 'root'@'localhost' IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD('$root_password');"
    if [ -n "${MARIADB_DATABASE:-}" ]; then echo "CREATE DATABASE IF NOT EXISTS \`$MARIADB_DATABASE\`;"; fi
    if [ -n "${MARIADB_USER:-}" ]; then
      echo "CREATE USER '$MARIADB_USER'@'%' IDENTIFIED BY '${MARIADB_PASSWORD:-}';"
      if [ -n "${MARIADB_DATABASE:-}" ]; then echo "GRANT ALL ON \`$MARIADB_DATABASE\`.* TO '$MARIADB_USER'@'%';"; fi
    fi
  } | mariadb --socket=/run/mysqld/init.sock -uroot
  kill "$pid"
  wait "$pid" || true
  echo "stand-in mariadb: initialised /var/lib/mysql"
fi
if [ "${1:-}" = mariadbd ]; then
  shift
  exec mariadbd --user=mysql "$@"
fi
exec "$@"
