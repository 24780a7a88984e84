#!/usr/bin/env bash
# The Docker image's build, checked where there is no Docker engine (CI runs it from .ci/run):
#
# 1. The build context: the repository's files (tracked, and untracked ones git does not ignore) that
#    .dockerignore lets through, copied to a temporary directory.
# 2. The Dockerfile's `build` stage as a shell script, printed and run: its ARGs and ENVs exported, its
#    COPYs as cp from the context into a fresh WORKDIR, each RUN in `sh -c` there. A cache mount inside
#    WORKDIR (the build's migrated initial database) is a directory kept between runs in $cache below; a
#    cache mount elsewhere (pnpm's store) is the host's own. ARG RUNTIME points into the temp directory.
# 3. The last stage: its COPY --from=build of the runtime folder, its ENV, its ENTRYPOINT and CMD, run as
#    an unprivileged user (nobody when this runs as root, through setpriv) with the folder read-only,
#    so a write into it fails here as it would in the image (USER node, files owned by root). The stage's
#    own RUN lines (the /data volume's owner) are system setup of the image and are not run.
# 4. That command on free ports with a fresh data dir (the embedded database), and an empty environment
#    but for the stage's ENV: /ready polled with a timeout from the machine's cores and load, one
#    authenticated request with the demo token from demo-credentials.json, /docs/scalar.js, the console's
#    script and /widget.js
#    (files the server reads at run time), the receiver's /ready and `--help`; then SIGTERM and exit 0.
#
# Usage: bash scripts/docker-build-check.sh        (from anywhere; about a minute on 2 cores)
#   PARLEY_DOCKER_CHECK_READY_TIMEOUT=600   seconds to wait for /ready instead of the derived value
#   PARLEY_DOCKER_CHECK_KEEP=1              keep the temporary directory (printed) for inspection
#   PARLEY_DOCKER_CHECK_CACHE=dir           where cache mounts persist (default ~/.cache/parley-docker-build-check)
set -euo pipefail
umask 022 # the modes Docker's build gives files

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
started=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/parley-docker-check.XXXXXX")
chmod 755 "$work"
cache=${PARLEY_DOCKER_CHECK_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/parley-docker-build-check}
mkdir -p "$cache"
# entries made over a month ago go (one per version of the migrations; a build remakes its own)
find "$cache" -type f -mtime +30 -delete 2>/dev/null || true
server_pid=""

say() { printf '[docker-build-check %3ss] %s\n' "$(($(date +%s) - started))" "$*"; }

cleanup() {
  local status=$?
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then kill -KILL "$server_pid" 2>/dev/null || true; fi
  if [ $status -ne 0 ] && [ -f "$work/server.log" ]; then
    echo "---- server log (last 60 lines) ----"
    tail -n 60 "$work/server.log" || true
  fi
  chmod -R u+w "$work" 2>/dev/null || true
  if [ "${PARLEY_DOCKER_CHECK_KEEP:-}" = "1" ]; then echo "kept $work"; else rm -rf "$work"; fi
  if [ $status -eq 0 ]; then say "passed"; else say "FAILED (exit $status)"; fi
}
trap cleanup EXIT

# ---------------------------------------------------------------------------------------------------
# 1 and 2: the context, and the build stage as a shell script (written by the parser below)
say "parsing Dockerfile and .dockerignore, copying the build context"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard) >"$work/files.list"
node - "$repo" "$work" "$cache" <<'PARSER'
const Fs = require("node:fs")
const Path = require("node:path")
const [repo, work, cache] = process.argv.slice(2)
const fail = (message) => { console.error(`docker-build-check: ${message}`); process.exit(1) }
const q = (s) => `'${String(s).replace(/'/g, `'\\''`)}'`

// .dockerignore, as moby's patternmatcher reads it: the last matching pattern decides, a pattern
// matches a path or any of its parent directories, `!` re-includes, `*` and `?` stay within a segment
const patterns = Fs.readFileSync(Path.join(repo, ".dockerignore"), "utf8").split("\n")
  .map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"))
  .map((l) => {
    const exclusion = l.startsWith("!")
    const cleaned = Path.posix.normalize((exclusion ? l.slice(1) : l).trim()).replace(/^\/+/, "").replace(/\/+$/, "")
    let re = ""
    for (let i = 0; i < cleaned.length; i++) {
      const c = cleaned[i]
      if (c === "*" && cleaned[i + 1] === "*") {
        i++
        if (cleaned[i + 1] === "/") { i++; re += "(?:.*/)?" } else re += ".*"
      } else if (c === "*") re += "[^/]*"
      else if (c === "?") re += "[^/]"
      else if (c === "\\") re += "\\" + cleaned[++i]
      else re += c.replace(/[.+^${}()|[\]]/g, "\\$&")
    }
    return { exclusion, re: new RegExp(`^${re}$`) }
  })
const excluded = (file) => {
  const parts = file.split("/")
  const candidates = parts.map((_, i) => parts.slice(0, i + 1).join("/"))
  let out = false
  for (const p of patterns) if (candidates.some((c) => p.re.test(c))) out = !p.exclusion
  return out
}
const context = Path.join(work, "context")
let count = 0
for (const file of Fs.readFileSync(Path.join(work, "files.list"), "utf8").split("\0")) {
  if (file === "" || excluded(file) || !Fs.existsSync(Path.join(repo, file))) continue
  Fs.mkdirSync(Path.dirname(Path.join(context, file)), { recursive: true })
  Fs.copyFileSync(Path.join(repo, file), Path.join(context, file))
  count++
}
if (count === 0) fail(".dockerignore lets no file through")
console.log(`  build context: ${count} files`)

// the Dockerfile as instructions: continuation lines joined, comments dropped
const instructions = []
let current = null
for (const raw of Fs.readFileSync(Path.join(repo, "Dockerfile"), "utf8").split("\n")) {
  const line = raw.replace(/\r$/, "")
  if (/^\s*#/.test(line) || (current === null && line.trim() === "")) continue
  current = current === null ? line.trim() : `${current} ${line.trim()}`
  if (current.endsWith("\\")) { current = current.slice(0, -1).trimEnd(); continue }
  const m = /^(\w+)\s+([\s\S]*)$/.exec(current)
  if (m === null) fail(`cannot read Dockerfile instruction: ${current}`)
  instructions.push({ keyword: m[1].toUpperCase(), args: m[2] })
  current = null
}
const stages = []
const globalArgs = {}
for (const ins of instructions) {
  if (ins.keyword === "FROM") {
    const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args)
    const from = m[1].replace(/\$\{(\w+)\}|\$(\w+)/g, (all, a, b) => globalArgs[a ?? b] ?? all)
    stages.push({ from, name: m[2], instructions: [] })
  } else if (stages.length > 0) stages[stages.length - 1].instructions.push(ins)
  else if (ins.keyword === "ARG") {
    const [name, value = ""] = ins.args.split(/=(.*)/s)
    globalArgs[name] = value
  }
}
const build = stages.find((s) => s.name === "build")
if (build === undefined) fail("no `FROM ... AS build` stage in the Dockerfile")
const final = stages[stages.length - 1]
if (final === build) fail("the build stage is the last stage: expected a runtime stage after it")

const src = Path.join(work, "src")
const runtime = Path.join(work, "runtime")
let workdir = null
let runtimeDefault = null
const script = ["set -e", `mkdir -p ${q(src)}`, `cd ${q(src)}`, "step() { printf '[docker-build-check] build stage: %s\\n' \"$1\"; }"]
const inWorkdir = (p) => {
  if (workdir === null) fail("a COPY or cache mount before the build stage's WORKDIR")
  const abs = Path.posix.isAbsolute(p) ? p : Path.posix.join(workdir, p)
  const rel = Path.posix.relative(workdir, abs)
  return rel.startsWith("..") ? null : Path.join(src, rel)
}
for (const { keyword, args } of build.instructions) {
  switch (keyword) {
    case "WORKDIR":
      if (workdir !== null && workdir !== args) fail("one WORKDIR in the build stage, please")
      workdir = args
      script.push(`# WORKDIR ${args}  (here: ${src})`)
      break
    case "ARG": {
      const [name, value = ""] = args.split(/=(.*)/s)
      if (name === "RUNTIME") runtimeDefault = value
      script.push(`# ARG ${args}`, `export ${name}=${q(name === "RUNTIME" ? runtime : value)}`)
      break
    }
    case "ENV":
      for (const pair of args.split(/\s+/)) {
        if (!/^\w+=\S*$/.test(pair)) fail(`ENV in the build stage: only NAME=value pairs without spaces (${args})`)
        script.push(`export ${pair}`)
      }
      break
    case "COPY": {
      const words = args.split(/\s+/)
      if (words.some((w) => w.startsWith("--from"))) fail("COPY --from in the build stage")
      const paths = words.filter((w) => !w.startsWith("--"))
      const dest = paths.pop()
      const target = inWorkdir(dest)
      if (target === null) fail(`COPY to ${dest}, outside the build stage's WORKDIR`)
      script.push(`# COPY ${args}`, `step ${q(`COPY ${args}`)}`)
      for (const from of paths) {
        const source = Path.join(context, from)
        if (!Fs.existsSync(source)) fail(`COPY ${from}: not in the build context (see .dockerignore)`)
        if (Fs.statSync(source).isDirectory()) script.push(`mkdir -p ${q(target)}`, `cp -R ${q(source + "/.")} ${q(target + "/")}`)
        else if (dest.endsWith("/") || paths.length > 1) script.push(`mkdir -p ${q(target)}`, `cp ${q(source)} ${q(target + "/")}`)
        else script.push(`mkdir -p ${q(Path.dirname(target))}`, `cp ${q(source)} ${q(target)}`)
      }
      break
    }
    case "RUN": {
      let rest = args
      const before = []
      const after = []
      let m
      while ((m = /^--(\w+)=(\S+)\s+/.exec(rest)) !== null) {
        rest = rest.slice(m[0].length)
        if (m[1] !== "mount") fail(`RUN --${m[1]} is not supported here`)
        const options = Object.fromEntries(m[2].split(",").map((o) => o.split("=")))
        if (options.type !== "cache") fail(`RUN --mount=type=${options.type} is not supported here`)
        const target = inWorkdir(options.target)
        if (target === null) {
          before.push(`# cache mount ${options.target}: the host's own`)
          continue
        }
        const kept = Path.join(cache, (options.id ?? options.target).replace(/[^\w.-]+/g, "_"))
        before.push(`mkdir -p ${q(kept)} ${q(Path.dirname(target))}`, `rm -rf ${q(target)}`, `ln -s ${q(kept)} ${q(target)}  # cache mount ${options.target}`)
        after.push(`rm -f ${q(target)}`)
      }
      if (rest.startsWith("[") || rest.startsWith("<<")) fail(`RUN in exec or here-document form: ${rest}`)
      script.push(`# RUN ${args}`, `step ${q(`RUN ${rest}`)}`, ...before, `sh -c ${q(rest)}`, ...after)
      break
    }
    default:
      fail(`${keyword} in the build stage is not supported by this check: extend it, or keep the stage simple`)
  }
}
if (runtimeDefault === null) fail("the build stage has no ARG RUNTIME=<folder> (where it assembles the runtime folder)")
Fs.writeFileSync(Path.join(work, "build-stage.sh"), script.join("\n") + "\n")

// the last stage: its COPY of the runtime folder, ENV, WORKDIR, ENTRYPOINT and CMD
const env = []
let appdir = null
let copied = false
let entrypoint = []
let cmd = []
const skipped = []
for (const { keyword, args } of final.instructions) {
  if (keyword === "ENV") {
    for (const pair of args.split(/\s+/)) {
      if (!/^\w+=\S*$/.test(pair)) fail(`ENV in the last stage: only NAME=value pairs without spaces (${args})`)
      env.push(pair)
    }
  } else if (keyword === "WORKDIR") appdir = args
  else if (keyword === "COPY") {
    const words = args.split(/\s+/)
    if (!words.includes("--from=build") || words.filter((w) => !w.startsWith("--")).join(" ") !== `${runtimeDefault} ${appdir}`) {
      fail(`the last stage copies something other than the build stage's ${runtimeDefault} into its WORKDIR: COPY ${args}`)
    }
    copied = true
  } else if (keyword === "ENTRYPOINT") entrypoint = JSON.parse(args)
  else if (keyword === "CMD") cmd = JSON.parse(args)
  else if (keyword === "RUN") skipped.push(args)
}
if (!copied) fail("the last stage has no COPY --from=build of the runtime folder")
const command = [...entrypoint, ...cmd]
if (command[0] !== "node") fail(`the image's command does not start with node: ${JSON.stringify(command)}`)
Fs.writeFileSync(Path.join(work, "final-stage.sh"), [
  `final_from=${q(final.from)}`,
  `runtime_default=${q(runtimeDefault)}`,
  `final_workdir=${q(appdir)}`,
  `final_env=(${env.map(q).join(" ")})`,
  `final_command=(${command.map(q).join(" ")})`,
  `final_skipped=(${skipped.map(q).join(" ")})`
].join("\n") + "\n")
PARSER

echo "---- the build stage as a shell script ($work/build-stage.sh) ----"
grep -v '^step ' "$work/build-stage.sh" | sed 's/^/  /'
echo "----"
phase=$(date +%s)
sh -e "$work/build-stage.sh"
say "build stage done in $(($(date +%s) - phase)) s"

# ---------------------------------------------------------------------------------------------------
# 3: the last stage
# shellcheck disable=SC1091
. "$work/final-stage.sh"
app="$work/app"
mkdir -p "$app"
cp -R "$work/runtime/." "$app/"
for cmd in "${final_skipped[@]}"; do say "last stage: not run here (system setup of the image): RUN $cmd"; done
# the image holds the runtime folder and nothing else: no symlink may lead out of it
escapes=$(find "$app" -type l | while read -r link; do
  target=$(readlink -f "$link" || true)
  case "$target" in "$app"/*) ;; *) echo "$link -> $target" ;; esac
done)
if [ -n "$escapes" ]; then echo "symlinks leading out of the runtime folder:"; echo "$escapes"; exit 1; fi
# and Node must not find modules outside it (a node_modules in a parent directory would hide a missing one)
dir=$work
while [ "$dir" != "/" ]; do
  if [ -d "$dir/node_modules" ]; then echo "$dir/node_modules would be visible to the runtime folder: set TMPDIR elsewhere"; exit 1; fi
  dir=$(dirname "$dir")
done
say "runtime folder: $(du -sh "$app" | cut -f1) ($(du -sh "$app/dist" | cut -f1) bundle, $(du -sh "$app/node_modules" | cut -f1) node_modules), FROM $final_from, WORKDIR $final_workdir"

data="$work/data"
home="$work/home"
mkdir -p "$data" "$home"
chmod -R a-w "$app"
as_user=()
if [ "$(id -u)" -eq 0 ]; then
  if ! command -v setpriv >/dev/null 2>&1; then echo "running as root without setpriv (util-linux): cannot drop privileges"; exit 1; fi
  chown 65534:65534 "$data" "$home"
  as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
fi

# ---------------------------------------------------------------------------------------------------
# 4: start it as the image would, on free ports
cores=$(nproc 2>/dev/null || echo 1)
load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
# 120 s for each unit of load per core (the load now plus this start), rounded up, at most 20 minutes:
# a healthy start takes seconds; this only bounds a hung one without failing a busy machine
derived=$(awk -v l="$load" -v c="$cores" 'BEGIN { n = (l + 1) / c; u = int(n); if (u < n) u++; if (u < 1) u = 1; t = 120 * u; if (t > 1200) t = 1200; print t }')
timeout=${PARLEY_DOCKER_CHECK_READY_TIMEOUT:-$derived}

free_ports() { node -e '
  const net = require("node:net"); const servers = []
  const next = () => { const s = net.createServer().listen(0, "127.0.0.1", () => { servers.push(s)
    if (servers.length < 3) next(); else { console.log(servers.map((x) => x.address().port).join(" ")); servers.forEach((x) => x.close()) } }) }
  next()'; }

attempt=1
while :; do
  read -r api_port receiver_port runner_port < <(free_ports)
  say "starting: ${final_command[*]} (api $api_port, receiver $receiver_port, ready within ${timeout} s: $cores cores, load $load)"
  (
    cd "$app"
    exec "${as_user[@]}" env -i PATH="$PATH" HOME="$home" "${final_env[@]}" \
      PORT="$api_port" RECEIVER_PORT="$receiver_port" RUNNER_PORT="$runner_port" PARLEY_DATA_DIR="$data" \
      "${final_command[@]}"
  ) >"$work/server.log" 2>&1 &
  server_pid=$!
  phase=$(date +%s)
  set +e
  node - "$api_port" "$receiver_port" "$server_pid" "$timeout" "$data" <<'CHECKS'
const [apiPort, receiverPort, pid, timeoutSeconds, data] = process.argv.slice(2)
const Fs = require("node:fs")
const api = `http://127.0.0.1:${apiPort}`
const alive = () => { try { process.kill(Number(pid), 0); return true } catch { return false } }
const get = async (url, headers = {}, ms = 30_000) => {
  const response = await fetch(url, { headers, signal: AbortSignal.timeout(ms) })
  return { status: response.status, body: await response.text() }
}
const expect = (what, ok, detail) => {
  if (!ok) { console.error(`docker-build-check: ${what}: ${detail}`); process.exit(1) }
  console.log(`  ok  ${what}`)
}
const main = async () => {
  const deadline = Date.now() + Number(timeoutSeconds) * 1000
  const started = Date.now()
  for (;;) {
    if (!alive()) { console.error("docker-build-check: the server exited before it was ready"); process.exit(3) }
    // short: a request the listener accepts before its routes are served is never answered
    const ready = await get(`${api}/ready`, {}, 2_000).catch(() => undefined)
    if (ready?.status === 200) break
    if (Date.now() > deadline) { console.error(`docker-build-check: /ready did not answer 200 within ${timeoutSeconds} s`); process.exit(1) }
    await new Promise((r) => setTimeout(r, 500))
  }
  console.log(`  ok  /ready 200 after ${((Date.now() - started) / 1000).toFixed(1)} s`)
  const credentials = JSON.parse(Fs.readFileSync(`${data}/demo-credentials.json`, "utf8"))
  const me = await get(`${api}/api/user/me`, { authorization: `Bearer ${credentials.token}` })
  expect("GET /api/user/me with the demo token", me.status === 200 && JSON.parse(me.body).data?.user?.email === credentials.email, `${me.status} ${me.body.slice(0, 300)}`)
  const anonymous = await get(`${api}/api/user/me`)
  expect("GET /api/user/me without a token is 401", anonymous.status === 401, `${anonymous.status}`)
  const scalar = await get(`${api}/docs/scalar.js`)
  expect("GET /docs/scalar.js (an asset of the build)", scalar.status === 200 && scalar.body.length > 100_000, `${scalar.status}, ${scalar.body.length} bytes`)
  const consoleScript = await get(`${api}/console/assets/console.js`)
  expect("GET /console/assets/console.js (the console's bundle, an asset of the build)", consoleScript.status === 200 && consoleScript.body.length > 10_000, `${consoleScript.status}, ${consoleScript.body.length} bytes`)
  const widget = await get(`${api}/widget.js`)
  expect("GET /widget.js (an asset beside the bundle)", widget.status === 200 && widget.body.length > 1000, `${widget.status}, ${widget.body.length} bytes`)
  const receiver = await get(`http://127.0.0.1:${receiverPort}/ready`)
  expect("GET /ready on the receiver", receiver.status === 200, `${receiver.status} ${receiver.body}`)
}
main().catch((e) => { console.error(`docker-build-check: ${e}`); process.exit(1) })
CHECKS
  status=$?
  set -e
  if [ $status -eq 0 ]; then break; fi
  if [ $status -eq 3 ] && [ $attempt -lt 3 ] && grep -q EADDRINUSE "$work/server.log"; then
    say "a port was taken meanwhile: trying other ports"
    attempt=$((attempt + 1))
    continue
  fi
  exit 1
done
say "ready and answering in $(($(date +%s) - phase)) s"

(cd "$app" && "${as_user[@]}" env -i PATH="$PATH" HOME="$home" "${final_env[@]}" "${final_command[0]}" "${final_command[1]}" --help >"$work/help.txt")
grep -q "serve \[--role" "$work/help.txt" || { echo "--help printed no usage:"; cat "$work/help.txt"; exit 1; }
say "ok  ${final_command[0]} ${final_command[1]} --help"

kill -TERM "$server_pid"
for _ in $(seq 1 60); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.5; done
if kill -0 "$server_pid" 2>/dev/null; then echo "the server did not stop within 30 s of SIGTERM"; exit 1; fi
set +e; wait "$server_pid"; code=$?; set -e
server_pid=""
if [ $code -ne 0 ]; then echo "the server exited with $code after SIGTERM"; exit 1; fi
if [ -e "$data/lock" ] || [ -e "$data/server.json" ]; then echo "the data dir's lock or server.json was left behind"; exit 1; fi
say "ok  SIGTERM: exit 0, lock and server.json removed; whole check $(($(date +%s) - started)) s"
