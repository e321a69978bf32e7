#!/bin/sh
# The stand-in's health check: the two tests of the official healthcheck.sh
# that docker-compose.yml asks for.
#   --connect             the server accepts a connection
#   --innodb_initialized  InnoDB is up
set -eu
q() { mariadb --protocol=socket -uroot -N -B -e "$1"; }
for test in "$@"; do
  case $test in
    --connect) q 'SELECT 1' >/dev/null ;;
    --innodb_initialized)
      [ "$(q "SELECT 1 FROM information_schema.ENGINES WHERE engine = 'InnoDB' AND support IN ('YES', 'DEFAULT', 'ENABLED')")" = 1 ] ;;
    *) echo "healthcheck.sh (stand-in): unknown test $test" >&2; exit 2 ;;
  esac
done
