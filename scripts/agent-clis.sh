#!/usr/bin/env bash
# Install the real agent CLIs the end-to-end tests drive (issue 32), at pinned versions, into
# the directory named (default: ~/.cache/splice/agent-clis), unless they are there already at
# those versions. Needs node and npm (installed from Debian's packages when missing, as root).
set -euo pipefail
dir="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/splice/agent-clis}"
claude_version=2.1.197
codex_version=0.171.0
if ! command -v npm >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
fi
bin="$dir/node_modules/.bin"
have() { "$bin/$1" --version 2>/dev/null | grep -q "$2"; }
if have claude "$claude_version" && have codex "$codex_version"; then
    echo "agent-clis: claude $claude_version and codex $codex_version in $dir"
    exit 0
fi
mkdir -p "$dir"
npm install --no-audit --no-fund --loglevel=error --prefix "$dir" \
    "@anthropic-ai/claude-code@$claude_version" "@openai/codex@$codex_version"
have claude "$claude_version" || { echo "agent-clis: claude $claude_version did not install" >&2; exit 1; }
have codex "$codex_version" || { echo "agent-clis: codex $codex_version did not install" >&2; exit 1; }
echo "agent-clis: installed claude $claude_version and codex $codex_version in $dir"
