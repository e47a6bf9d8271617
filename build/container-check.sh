#!/usr/bin/env bash
# Builds and runs the container image without a Docker engine or a registry:
#
#  1. build/build.sh (the script the Dockerfile runs) writes the static binary
#     and the models folder;
#  2. buildah (vfs storage, chroot isolation) builds an image FROM scratch
#     from the Dockerfile's final stage, with its base replaced by scratch and
#     its COPY --from=build sources taken from step 1's output;
#  3. buildah inspect checks the image's user (numeric, not root),
#     entrypoint, environment and exposed port;
#  4. the image runs (buildah run --network host, on a free port), answers
#     /v2/health/live, /v2/health/ready and the README's prediction (the
#     digit 7 of examples/mnist-digit.json), runs as the image's user, and
#     stops cleanly on SIGTERM.
#
# Needs buildah, jq, curl and ss (iproute2). Everything it makes (storage,
# images, containers, build output) lives in one temporary directory that is
# removed on exit, whether the checks passed or not.
set -euo pipefail
cd "$(dirname "$0")/.."

version=ci-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
image=localhost/quantserve-ci:$version
work=$(mktemp -d "${TMPDIR:-/tmp}/quantserve-image.XXXXXX")
B=(buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs)
ctr="" bpid="" spid=""

cleanup() {
  if [ -n "$spid" ] && kill -0 "$spid" 2>/dev/null; then kill -KILL "$spid" 2>/dev/null || true; fi
  if [ -n "$bpid" ] && kill -0 "$bpid" 2>/dev/null; then kill -KILL "$bpid" 2>/dev/null || true; fi
  if [ -n "$bpid" ]; then wait "$bpid" 2>/dev/null || true; fi
  if [ -n "$ctr" ]; then "${B[@]}" rm "$ctr" >/dev/null 2>&1 || true; fi
  "${B[@]}" rmi --all --force >/dev/null 2>&1 || true
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
trap 'exit 143' INT TERM

fail() {
  echo "container check: $*" >&2
  if [ -s "$work/serve.log" ]; then echo "--- server log:" >&2; cat "$work/serve.log" >&2; fi
  exit 1
}

start=$SECONDS

# 1. The build the Dockerfile runs.
VERSION=$version sh build/build.sh "$work/out"

# 2. The Dockerfile's final stage on scratch.
awk '/^FROM /{stage=""} {stage = stage $0 "\n"} END{printf "%s", stage}' Dockerfile |
  sed -e 's|^FROM .*|FROM scratch|' -e '/^COPY /{s| --from=build||; s| /out/| |g}' >"$work/Containerfile"
if grep -qE '^(RUN|COPY --from)' "$work/Containerfile"; then
  cat "$work/Containerfile"
  fail "the Dockerfile's final stage has a RUN or another COPY --from: a scratch image cannot mirror it"
fi
echo "--- Containerfile (the Dockerfile's final stage on scratch):"
cat "$work/Containerfile"
"${B[@]}" bud --quiet --isolation chroot --layers=false -f "$work/Containerfile" -t "$image" "$work/out" >/dev/null

# 3. What the image promises.
cfg=$("${B[@]}" inspect --type image "$image" | jq '.OCIv1.config')
echo "--- image config:"
jq -c . <<<"$cfg"
user=$(jq -r '.User // ""' <<<"$cfg")
[[ $user =~ ^([0-9]+)(:[0-9]+)?$ ]] || fail "user \"$user\" is not numeric (uid[:gid]): runAsNonRoot cannot verify a name"
uid=${BASH_REMATCH[1]}
[ "$uid" != 0 ] || fail "the image runs as root"
jq -e '.Entrypoint == ["/serve"]' <<<"$cfg" >/dev/null || fail "entrypoint is not [\"/serve\"]"
for kv in QUANTSERVE_ADDR=:8000 QUANTSERVE_MODEL_REPOSITORY=/models; do
  jq -e --arg kv "$kv" '.Env | index($kv) != null' <<<"$cfg" >/dev/null || fail "env lacks $kv"
done
jq -e '.ExposedPorts | has("8000/tcp") and has("8001/tcp")' <<<"$cfg" >/dev/null || fail "ports 8000/tcp (HTTP) and 8001/tcp (gRPC) are not both exposed"
mapfile -t entrypoint < <(jq -r '.Entrypoint[]' <<<"$cfg")

# 4. Run it on a free port of the host network.
free_port() {
  for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 20000))
    if [ -z "$(ss -Hltn "sport = :$p")" ]; then echo "$p"; return; fi
  done
}
port=$(free_port)
[ -n "$port" ] || fail "no free port found"
grpc_port=$(free_port) # gRPC's default :8001 on the host network may be taken
[ -n "$grpc_port" ] && [ "$grpc_port" != "$port" ] || fail "no second free port found"
ctr=$("${B[@]}" from --quiet "$image")
"${B[@]}" config --env QUANTSERVE_ADDR=127.0.0.1:$port --env QUANTSERVE_GRPC_ADDR=127.0.0.1:$grpc_port "$ctr"
"${B[@]}" run --isolation chroot --network host "$ctr" -- "${entrypoint[@]}" >"$work/serve.log" 2>&1 &
bpid=$!
base=http://127.0.0.1:$port
for _ in $(seq 1 120); do
  kill -0 "$bpid" 2>/dev/null || fail "the container exited before it was ready"
  if curl -fs -o /dev/null "$base/v2/health/ready"; then break; fi
  sleep 0.5
done
curl -fs -o /dev/null "$base/v2/health/live" || fail "/v2/health/live did not answer 200"
curl -fs -o /dev/null "$base/v2/health/ready" || fail "/v2/health/ready did not answer 200"
[ -n "$(ss -Hltn "sport = :$grpc_port")" ] || fail "nothing listens for gRPC on QUANTSERVE_GRPC_ADDR's port $grpc_port"
spid=$(ss -Hltnp "sport = :$port" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
[ -n "$spid" ] || fail "no process listens on port $port"
puid=$(awk '/^Uid:/{print $2}' "/proc/$spid/status")
[ "$puid" = "$uid" ] || fail "the server runs as uid $puid, the image says $uid"

meta=$(curl -fsS "$base/v2") || fail "GET /v2 failed"
jq -e --arg v "$version" '.name == "quantserve" and .version == $v' <<<"$meta" >/dev/null ||
  fail "GET /v2 = $meta: want name quantserve, version $version (build/build.sh's VERSION)"
resp=$(curl -fsS "$base/v2/models/mnist/infer" -H 'Content-Type: application/json' -d @examples/mnist-digit.json) ||
  fail "infer failed"
jq -e '.model_name == "mnist" and .id == "digit-7"
       and (.outputs[0].data | length == 10 and (.[7] | . > 0.9999 and . <= 1) and (. | index(max)) == 7)' \
  <<<"$resp" >/dev/null || fail "infer answered $resp: want scores[7] ≈ 0.99996"
echo "--- the README's prediction from the container: scores[7] = $(jq '.outputs[0].data[7]' <<<"$resp")"

# SIGTERM, as a container runtime stops it: the server shuts down cleanly.
kill -TERM "$spid"
for _ in $(seq 1 120); do
  kill -0 "$bpid" 2>/dev/null || break
  sleep 0.5
done
kill -0 "$bpid" 2>/dev/null && fail "the server did not stop within 60 s of SIGTERM"
rc=0
wait "$bpid" || rc=$?
bpid="" spid=""
[ "$rc" = 0 ] || fail "the container exited with status $rc after SIGTERM"
grep -q 'drained: every request finished' "$work/serve.log" || fail "the server did not log that it drained"

echo "container check passed: $image (user $user, port $port) in $((SECONDS - start)) s"
