#!/bin/sh
# The stand-in's start: zoo.cfg from the official image's ZOO_* variables.
set -eu
cat > /etc/zookeeper/conf/zoo.cfg <<CFG
dataDir=/data
dataLogDir=/datalog
clientPort=2181
tickTime=${ZOO_TICK_TIME:-2000}
initLimit=${ZOO_INIT_LIMIT:-5}
syncLimit=${ZOO_SYNC_LIMIT:-2}
maxClientCnxns=${ZOO_MAX_CLIENT_CNXNS:-60}
standaloneEnabled=true
admin.enableServer=${ZOO_ADMINSERVER_ENABLED:-true}
4lw.commands.whitelist=${ZOO_4LW_COMMANDS_WHITELIST:-srvr}
CFG
exec "$@"
