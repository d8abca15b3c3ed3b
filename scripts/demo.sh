#!/usr/bin/env bash
# The demo command of README.md: install the build dependencies, configure with the default
# preset, build quiver-demo (and what it needs: quiverc, libquiver), run it on the best
# backend of this machine. Arguments are passed to quiver-demo (e.g. --backend cpu).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/bootstrap.sh
cmake --preset default
cmake --build --preset default -j2 --target quiver-demo
exec build/default/tools/quiver-demo/quiver-demo "$@"
