#!/bin/sh
# Start or stop the LTTng session daemon used by the tests that record a
# real UST trace.  A daemon that was already running is used and left
# alone; one started here is stopped here (destroy sessions, SIGTERM, wait).
#   lttng_sessiond.sh start|stop STATE_DIR
set -eu
cmd=$1
state=$2
mkdir -p "$state"
if [ "$(id -u)" -eq 0 ]; then
	pidfile=/var/run/lttng/lttng-sessiond.pid
else
	pidfile=${LTTNG_HOME:-$HOME}/.lttng/lttng-sessiond.pid
fi

running() {
	[ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

case $cmd in
start)
	if running; then
		echo "lttng-sessiond already running (pid $(cat "$pidfile")): using it"
		rm -f "$state/ours"
		exit 0
	fi
	# --daemonize returns once the daemon is ready; never --background in
	# a script (it keeps our stdout open).
	lttng-sessiond --daemonize --no-kernel
	i=0
	while ! running; do
		i=$((i + 1))
		[ $i -lt 50 ] || { echo "lttng-sessiond did not start" >&2; exit 1; }
		sleep 0.1
	done
	cat "$pidfile" > "$state/ours"
	echo "started lttng-sessiond pid $(cat "$pidfile")"
	;;
stop)
	[ -f "$state/ours" ] || exit 0
	pid=$(cat "$state/ours")
	lttng destroy --all >/dev/null 2>&1 || true
	kill -TERM "$pid" 2>/dev/null || true
	i=0
	while kill -0 "$pid" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 100 ] || { kill -KILL "$pid"; break; }
		sleep 0.1
	done
	rm -f "$state/ours"
	echo "stopped lttng-sessiond pid $pid"
	;;
*)
	echo "usage: $0 start|stop STATE_DIR" >&2
	exit 1
	;;
esac
