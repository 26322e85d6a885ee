#!/usr/bin/env bash
# Start or stop a local OCI registry (Debian's docker-registry, distribution
# 2.8) on 127.0.0.1 for manual work against the image pipeline.
#
#   scripts/registry.sh start DIR   # prints HOST:PORT once GET /v2/ answers
#   scripts/registry.sh stop DIR
#
# DIR holds the registry's storage (DIR/docker/registry/v2/...) and its
# control files: config.yml, registry.log, registry.pid, registry.host. The
# port is chosen by the kernel (http.addr 127.0.0.1:0) so several registries
# can run side by side; go-containerregistry speaks plain HTTP to loopback
# hosts without extra flags. This mirrors
# internal/registrytest, which tests use instead.
set -euo pipefail

BIN=${DOCKER_REGISTRY:-/usr/bin/docker-registry}
START_TIMEOUT=${REGISTRY_START_TIMEOUT:-60}

usage() {
	echo "usage: $0 start|stop DIR" >&2
	exit 2
}

die() {
	echo "registry.sh: $*" >&2
	exit 1
}

[[ $# -eq 2 ]] || usage
cmd=$1
dir=$2

running() {
	local pid=$1
	[[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null
}

start() {
	[[ -x "$BIN" ]] || die "docker-registry not found at $BIN: install it with 'sudo apt-get install docker-registry'"
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	if [[ -f "$dir/registry.pid" ]] && running "$(cat "$dir/registry.pid")"; then
		die "a registry is already running for $dir (pid $(cat "$dir/registry.pid"), $(cat "$dir/registry.host" 2>/dev/null)); stop it first"
	fi
	rm -f "$dir/registry.pid" "$dir/registry.host"

	# The packaged default config (port 5000, htpasswd auth) must not apply,
	# and REGISTRY_* variables would override ours.
	cat >"$dir/config.yml" <<EOF
version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: "$dir"
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: 127.0.0.1:0
  secret: "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
EOF
	: >"$dir/registry.log"
	env $(env | sed -n 's/^\(REGISTRY_[A-Za-z0-9_]*\)=.*/-u \1/p') \
		nohup "$BIN" serve "$dir/config.yml" >>"$dir/registry.log" 2>&1 </dev/null &
	local pid=$!
	echo "$pid" >"$dir/registry.pid"

	# The listen line names the port the kernel chose.
	local host="" deadline=$((SECONDS + START_TIMEOUT))
	while [[ -z "$host" ]]; do
		running "$pid" || { tail -n 20 "$dir/registry.log" >&2; die "docker-registry exited while starting (log: $dir/registry.log)"; }
		((SECONDS < deadline)) || { kill "$pid" 2>/dev/null || true; die "docker-registry did not report its address within ${START_TIMEOUT}s (log: $dir/registry.log)"; }
		host=$(sed -n 's/.*listening on \(127\.0\.0\.1:[0-9][0-9]*\).*/\1/p' "$dir/registry.log" | head -n 1)
		[[ -n "$host" ]] || sleep 0.05
	done
	# The line is logged just before the server accepts connections.
	until curl -fsS -o /dev/null "http://$host/v2/"; do
		running "$pid" || die "docker-registry exited while starting (log: $dir/registry.log)"
		((SECONDS < deadline)) || { kill "$pid" 2>/dev/null || true; die "docker-registry at $host did not answer GET /v2/ within ${START_TIMEOUT}s"; }
		sleep 0.05
	done
	echo "$host" >"$dir/registry.host"
	echo "$host"
}

stop() {
	if [[ ! -f "$dir/registry.pid" ]]; then
		echo "registry.sh: no registry.pid in $dir: nothing to stop" >&2
		return 0
	fi
	local pid
	pid=$(cat "$dir/registry.pid")
	if running "$pid"; then
		# Only signal the pid we recorded, and only if it is still our server.
		if [[ -r "/proc/$pid/cmdline" ]] && ! tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$dir/config.yml"; then
			die "pid $pid is no longer the registry started for $dir; remove $dir/registry.pid by hand"
		fi
		kill "$pid"
		local deadline=$((SECONDS + 10))
		while running "$pid" && ((SECONDS < deadline)); do sleep 0.05; done
		if running "$pid"; then
			kill -9 "$pid" 2>/dev/null || true
		fi
	fi
	rm -f "$dir/registry.pid" "$dir/registry.host"
}

case "$cmd" in
start) start ;;
stop) stop ;;
*) usage ;;
esac
